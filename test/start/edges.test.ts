// `svc start` edges: --no-demo leaves the checkpoint to a person (the run waits in the hub's
// pending list) and SIGTERM stops all; a port in use fails the start with one line, exit 1, and
// the anvil it had started is stopped.
import { createServer } from 'node:net'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { alive, anvilsOnPort, startChild } from './child.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

t.test('--no-demo: checkpoints wait for an operator, nothing listed; SIGTERM exits 0', async (t) => {
  const home = join(await tempDir(t, 'svc-start-'), 'home')
  const child = startChild(t, ['start', '--no-demo'], { ...process.env, SVC_HOME: home })
  const anvilPid = Number((await child.waitFor(/anvil pid (\d+)/, 120_000))[1])
  const api = (await child.waitFor(/^hub API +(http\S+)/m, 120_000))[1]!
  await child.waitFor(/Ctrl-C stops everything/, 120_000)
  const token = (await readFile(join(home, 'hub.token'), 'utf8')).trim()
  let pending: { id: string; sop: string; gate?: { kind?: string } }[] = []
  // Waits (bounded) until a coin event's run reaches the checkpoint and stays there.
  await waitFor(
    async () => {
      const r = await fetch(`${api}/sop/pending`, { headers: { authorization: `Bearer ${token}` } })
      pending = ((await r.json()) as { runs: typeof pending }).runs
      return pending.length > 0
    },
    'a run waiting at the checkpoint',
    { timeoutMs: 120_000, intervalMs: 500 },
  )
  t.ok(pending.length > 0, 'a run waits at the checkpoint')
  t.equal(pending[0]?.sop, 'vending-dispense')
  t.notMatch(child.out(), /approving/, 'nothing approved automatically')
  t.notMatch(child.out(), /^listing/m, 'nothing listed')
  process.kill(child.proc.pid!, 'SIGTERM')
  t.same(await child.exited, { code: 0, signal: null }, 'SIGTERM: exit 0')
  t.notOk(alive(anvilPid), 'anvil is gone')
})

t.test('a port in use: one line, exit 1, the started chain is stopped', async (t) => {
  const home = join(await tempDir(t, 'svc-start-'), 'home')
  const busy = createServer()
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => busy.close(() => r())))
  const busyPort = (busy.address() as { port: number }).port
  const rpc = await freePort()
  const child = startChild(t, ['start', '--rpc-port', String(rpc), '--market-port', String(busyPort)], {
    ...process.env,
    SVC_HOME: home,
  })
  const exit = await child.exited
  t.equal(exit.code, 1, 'exit 1')
  t.match(
    child.err().trim(),
    /^svc start: could not start: a port is already in use .*--port-base N$/,
    'says what and what to do',
  )
  t.equal(child.err().trim().split('\n').length, 1, 'one line, no stack trace')
  t.same(anvilsOnPort(rpc), [], 'no anvil left on the chain port')
})
