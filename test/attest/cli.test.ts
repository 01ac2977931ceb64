// The commands end to end: `svc chain dev` in its own process (stopped by pid), then
// `svc attest status|sync|export|verify-line` in process against it, and their bad inputs.
import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { readChainFile } from '../../chain/chain-file.ts'
import { loadOrCreateDeviceKey } from '../../hub/attest/device-key.ts'
import { attestStorePath, openAttestStore } from '../../hub/attest/store.ts'
import { main } from '../../cli/main.ts'
import { svcPaths } from '../../hub/paths.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import { tempDir } from '../helpers/tmp.ts'

const home = await tempDir(t)
const env = { ...process.env, SVC_HOME: home }
const outFile = join(home, 'copy-chain.json')
const child = spawn(
  process.execPath,
  ['--import', 'tsx', 'cli/main.ts', 'chain', 'dev', '--json', '--out', outFile],
  { env, stdio: ['ignore', 'pipe', 'inherit'] },
)
t.teardown(() => {
  if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGKILL')
})
const first = await new Promise<string>((resolve, reject) => {
  createInterface({ input: child.stdout! }).once('line', resolve)
  child.once('exit', (c) => reject(new Error(`svc chain dev exited ${c}`)))
})
const started = JSON.parse(first) as {
  pid: number
  rpcUrl: string
  attestorUrl: string
  device: string
  agentId: string
}

function cli(args: string[]) {
  const out: string[] = []
  const err: string[] = []
  return main(args, { out: (s) => void out.push(s), err: (s) => void err.push(s), env, cwd: home }).then(
    (code) => ({ code, out: out.join('\n'), err: err.join('\n') }),
  )
}

t.test('chain dev wrote the same chain file twice, with the attestor URL', async (t) => {
  const a = await readChainFile(join(home, 'chain.json'))
  const b = await readChainFile(outFile)
  t.ok(a.ok && b.ok)
  if (a.ok && b.ok) {
    t.same(a.value, b.value)
    t.equal(a.value.rpcUrl, started.rpcUrl)
    t.equal(a.value.attestorUrl, started.attestorUrl)
    t.equal(a.value.agentId, '0')
  }
  const signer = await loadOrCreateDeviceKey(svcPaths(env).deviceKey)
  t.equal(signer.address, started.device, 'the hub device key is the enrolled device')
})

t.test('status → sync → export → verify-line', async (t) => {
  const store = await openAttestStore(attestStorePath(svcPaths(env).data))
  const signer = await loadOrCreateDeviceKey(svcPaths(env).deviceKey)
  const tool = createChainAttestTool({ store, signer })
  for (let i = 0; i < 3; i++) {
    const r = await tool.run(
      { action: 'dispense', request_uri: `svc://req/${i}`, params: { n: i } },
      {
        runId: 'r',
        sop: 's',
        step: 1,
        call: i,
        idempotencyKey: `r:1:${i}`,
        signal: new AbortController().signal,
      },
    )
    t.ok(r.ok)
  }
  await store.close()

  let r = await cli(['attest', 'status', '--json'])
  t.equal(r.code, 0)
  t.match(JSON.parse(r.out), { total: 3, pending: 3, attested: 0 })
  r = await cli(['attest', 'sync'])
  t.equal(r.code, 0, r.err)
  t.match(r.out, /3 requested, 3 attested, 0 failed, 0 remaining/)
  t.match(r.err, /sync: 3\/3 lines/)
  r = await cli(['attest', 'status'])
  t.match(r.out, /attested\s+3/)

  r = await cli(['attest', 'export', '--out', 'exp'])
  t.equal(r.code, 0)
  const data = join(home, 'exp', 'operations.jsonl')
  const reqs = join(home, 'exp', 'operation-requests.txt')
  r = await cli(['attest', 'verify-line', '--data', data, '--requests', reqs, '--line', '2', '--agent', '0'])
  t.equal(r.code, 0, r.out)
  t.match(r.out, /line 2: verified/)

  const text = await readFile(data, 'utf8')
  await writeFile(join(home, 'tampered.jsonl'), text.replace('"n":1', '"n":7'))
  r = await cli([
    'attest',
    'verify-line',
    '--data',
    'tampered.jsonl',
    '--requests',
    reqs,
    '--line',
    '2',
    '--agent',
    '0',
  ])
  t.equal(r.code, 1)
  t.match(r.out, /NOT verified \(step 4, condition 4\)/)
  r = await cli(['attest', 'verify-line', '--data', data, '--requests', reqs, '--line', '2', '--agent', '3'])
  t.match(r.out, /condition 1/)

  r = await cli(['attest', 'export', '--out', 'part', '--from', '2', '--to', '3'])
  t.equal((await readFile(join(home, 'part', 'operations.jsonl'), 'utf8')).split('\n').length - 1, 2)
})

t.test('bad input: one line, exit 2, nothing changed', async (t) => {
  const cases: [string[], RegExp][] = [
    [['attest', 'frob'], /unknown command "frob"/],
    [['attest', 'export'], /export needs --out/],
    [['attest', 'export', '--out', 'x', '--from', 'a'], /--from must be a whole number/],
    [['attest', 'export', '--out', 'x', '--from', '3', '--to', '2'], /--to must not be before --from/],
    [['attest', 'verify-line', '--data', 'a', '--requests', 'b', '--agent', '0'], /needs --line/],
    [
      ['attest', 'verify-line', '--data', 'a', '--requests', 'b', '--line', '0', '--agent', '0'],
      /--line must be a whole number from 1/,
    ],
    [
      ['attest', 'verify-line', '--data', 'a', '--requests', 'b', '--line', '1', '--agent', 'x'],
      /--agent must be a decimal/,
    ],
    [['attest', 'status', '--bogus'], /Unknown option '--bogus'/],
    [['chain', 'deploy'], /unknown command "deploy"/],
    [['attestor', 'x'], /unexpected argument "x"/],
  ]
  for (const [args, re] of cases) {
    const r = await cli(args)
    t.equal(r.code, 2, args.join(' '))
    t.match(r.err, re)
    t.notMatch(r.err, /\n\s+at /, 'no stack trace')
  }
  const missing = await cli([
    'attest',
    'verify-line',
    '--data',
    'nope.jsonl',
    '--requests',
    'nope.txt',
    '--line',
    '1',
    '--agent',
    '0',
  ])
  t.equal(missing.code, 1)
  t.match(missing.err, /cannot read the data file nope.jsonl: ENOENT/)
  const noChain = await main(['attest', 'sync'], {
    out: () => {},
    err: (s) => t.match(s, /chain file .* not found/),
    env: { ...env, SVC_HOME: join(home, 'empty') },
    cwd: home,
  })
  t.equal(noChain, 1)
})

t.test('SIGTERM stops chain dev and its anvil', async (t) => {
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
  process.kill(child.pid!, 'SIGTERM')
  t.equal(await exited, 0)
  t.throws(() => process.kill(started.pid, 0), { code: 'ESRCH' }, 'anvil is gone')
})
