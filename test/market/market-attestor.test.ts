// `svc market` with an [attestor] table serves the attestor beside the market, as `svc start`
// does: a hub can sync against the market's URL alone. Without the table it serves none; a key
// that is not the market's attestor is refused at start with one line.
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { getAddress } from 'viem'
import { writeChainFile } from '../../hub/files/chain-file.ts'
import { startDevChain } from '../../chain/dev.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import { root } from '../start/child.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())

async function market(
  t: Teardown,
  toml: string,
  files: Record<string, string> = {},
  info: typeof dev.info = dev.info,
) {
  const dir = await tempDir(t, 'svc-market-attestor-')
  await writeChainFile(join(dir, 'chain.json'), info)
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text, { mode: 0o600 })
  const cfg = join(dir, 'market.toml')
  await writeFile(cfg, `port = 0\ndataDir = "data"\n[chain]\nfile = "chain.json"\n${toml}`)
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_HOME: dir }
  delete env.SVC_ATTESTOR_KEY
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'market', '--config', cfg], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => {
    if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGKILL')
  })
  let out = ''
  let err = ''
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  const started = new Promise<{ url: string; out: string } | { code: number | null; err: string }>(
    (resolve) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        const m = /listening on (http:\/\/\S+)/.exec(out)
        if (m) resolve({ url: m[1]!, out })
      })
      child.on('close', (code) => resolve({ code, err }))
    },
  )
  return started
}

t.test('[attestor] mounts the attestor: a hub syncs against the market alone', async (t) => {
  const m = await market(t, '[attestor]\n')
  if (!('url' in m)) throw new Error(`market did not start: ${m.err}`)
  t.match(m.out, `attestor ${dev.accounts.attestor.address} at /api/attestor`, 'says it serves the attestor')
  const info = await fetch(`${m.url}/api/attestor/info`)
  t.equal(info.status, 200)
  t.match(await info.json(), {
    address: dev.accounts.attestor.address,
    validationRegistry: getAddress(dev.validationRegistry),
  })

  const dir = await tempDir(t)
  const store = await openAttestStore(join(dir, 'db'))
  t.teardown(() => store.close())
  const signer = signerFromKey(dev.accounts.device.privateKey)
  const signal = new AbortController().signal
  await createChainAttestTool({ store, signer }).run(
    { action: 'vend', request_uri: 'u', params: { slot: 'A1' } },
    { runId: 'r', sop: 's', step: 1, call: 0, idempotencyKey: 'k', signal },
  )
  const report = await createAttestSync({ store, chain: dev.info, attestorUrl: m.url, signer }).runOnce()
  t.match(report, { attested: 1, remaining: 0 }, 'the line is attested through the market')
})

t.test('without [attestor] the market serves no attestor', async (t) => {
  const m = await market(t, '')
  if (!('url' in m)) throw new Error(`market did not start: ${m.err}`)
  t.equal((await fetch(`${m.url}/api/attestor/info`)).status, 404)
})

t.test('[attestor] with a key that is not the attestor: one line, exit 1', async (t) => {
  const m = await market(t, '[attestor]\nkeyFile = "other.key"\n', {
    'other.key': dev.accounts.owner.privateKey,
  })
  t.match(m, { code: 1 })
  const err = 'err' in m ? m.err : ''
  t.match(err, /svc market: \[attestor\]: the attestor key is for 0x[0-9a-fA-F]{40}, but .* 0x/)
  t.equal(err.trim().split('\n').length, 1, 'one line, no stack trace')
})

t.test('a validation registry with no code: the market refuses to start, one line naming it', async (t) => {
  const nowhere = dev.accounts.payout.address
  const m = await market(t, '', {}, { ...dev.info, validationRegistry: nowhere })
  t.match(m, { code: 1 })
  const err = 'err' in m ? m.err : ''
  t.match(err, new RegExp(`svc market: market: preflight failed: .*${nowhere.slice(2, 10)}`, 'i'))
  t.equal(err.trim().split('\n').length, 1, 'one line, no stack trace')
})
