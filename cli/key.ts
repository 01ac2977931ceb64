// `svc key set|show`: the device's market bearer key (market/API.md, "Agent keys"), stored in
// <SVC_HOME>/market.key with mode 0600; the market's origin beside it in market.json.
import { checkKey, checkMarketUrl, readKey, readMarketUrl, saveKey } from '../hub/listing/market-key.ts'
import { parseOptions } from './options.ts'
import { svcPaths } from '../hub/paths.ts'
import { type Command, EXIT_FAIL, EXIT_OK, UsageError, UserError } from './io.ts'

export const KEY_HELP = `usage: svc key set <svc_key> [--market URL]
       svc key set --stdin [--market URL]
       svc key show [--json]

  set    store the device's market bearer key (from the market's key page) in
         <SVC_HOME>/market.key, mode 0600; --market sets the market it belongs to
         (--stdin reads the key from standard input, so it stays out of shell history)
  show   which key is stored (its prefix only) and the market URL`

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(
    argv,
    {
      market: { type: 'string' },
      stdin: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    'svc key --help',
  )
  if (values.help || positionals.length === 0) {
    io.out(KEY_HELP)
    return values.help ? EXIT_OK : 2
  }
  const [sub, ...rest] = positionals
  if (sub === 'set') {
    if (rest.length > 1 || (rest.length === 1) === Boolean(values.stdin))
      throw new UsageError('set needs the key as one argument, or --stdin')
    const raw = values.stdin ? await readStdin() : rest[0]!
    const k = checkKey(raw)
    if (!k.ok) throw new UserError(k.error)
    let market: string | undefined
    if (values.market !== undefined) {
      const m = checkMarketUrl(values.market)
      if (!m.ok) throw new UsageError(`--market: ${m.error}`)
      market = m.url
    }
    await saveKey(io.env, k.key, market)
    io.out(
      `key ${k.key.slice(0, 12)}… stored in ${svcPaths(io.env).marketKey} (mode 0600)${market ? `; market ${market}` : ''}`,
    )
    return EXIT_OK
  }
  if (sub === 'show') {
    if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`)
    const key = await readKey(io.env)
    const market = await readMarketUrl(io.env)
    if (values.json) io.out(JSON.stringify({ key: key ? key.slice(0, 12) : null, market }))
    else {
      io.out(
        `key     ${key ? `${key.slice(0, 12)}… (${svcPaths(io.env).marketKey})` : 'none (svc key set <svc_key>)'}`,
      )
      io.out(`market  ${market ?? 'not set (svc key set … --market URL)'}`)
    }
    return key ? EXIT_OK : EXIT_FAIL
  }
  throw new UsageError(`unknown command "${sub}" (see svc key --help)`)
}

/** Standard input as text, at most 4 KiB (a key is far shorter); works on pipes, files and sockets. */
async function readStdin(): Promise<string> {
  let text = ''
  for await (const chunk of process.stdin) {
    text += String(chunk)
    if (text.length > 4096) throw new UserError('--stdin: more than 4 KiB of input; expected one key')
  }
  return text
}
