// The engine under a disk guard (hub/disk/) on a real small disk: a tmpfs the test fills and
// frees. A checkpoint that cannot be written tells the guard, which refuses new work before it
// touches the store; once there is room the guard reopens the engine's LevelDB, the waiting run
// finishes where it was, and new work is taken again, all without restarting anything.
import t from 'tap'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createDiskGuard } from '../../hub/disk/guard.ts'
import { DISK_REFUSING } from '../../hub/disk/errors.ts'
import { createEngine } from '../../hub/engine/index.ts'
import type { Log } from '../../hub/log.ts'
import { fillDisk as fillUp, smallDisk } from '../helpers/small-disk.ts'
import { waitFor } from '../helpers/wait.ts'
import { call, event, incompressible, memoryTools, sop, step } from './helpers.ts'

const { path: mnt, error: mountError } = await smallDisk(t, 8, 'svc-small-disk-')

const filler = join(mnt, 'filler')
const fillDisk = () => fillUp(filler)

function recordingLog(): Log & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = []
  const at = (level: string) => (o: object | string, msg?: string) =>
    void lines.push({ level, msg: typeof o === 'string' ? o : (msg ?? '') })
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') }
}

t.test(
  'a failed checkpoint: new work refused untouched, the store reopened, the run finishes',
  { skip: mountError ? `needs a small tmpfs to fill (mount as root on Linux): ${mountError}` : false },
  async (t) => {
    const log = recordingLog()
    const guard = createDiskGuard({
      dataDir: mnt,
      reserve: { mb: 0, percent: null },
      log,
      intervalMs: 50,
      nearIntervalMs: 20,
    })
    await guard.start()
    t.teardown(() => guard.stop())
    const tools = memoryTools()
    const s = sop({
      maxConcurrent: 10,
      steps: [
        // A large output: its checkpoint needs fresh pages even on a full disk.
        step(1, { calls: [call('block', { pad: incompressible(64 * 1024) })] }),
        step(2, { calls: [call('echo', { done: true })], terminal: true }),
      ],
    })
    const engine = await createEngine({
      sops: [s],
      tools: tools.registry,
      dbPath: join(mnt, 'engine'),
      log,
      disk: guard,
    })
    t.teardown(() => engine.close())
    guard.addStore({ name: 'engine', path: join(mnt, 'engine'), reopen: () => engine.reopenStore() })

    const first = await engine.trigger('test-sop', event({ n: 1 }))
    await waitFor(() => tools.blockedCount() === 1, 'the run to reach its blocking step')
    await fillDisk()
    tools.release()
    await waitFor(() => guard.refusing(), 'the failed checkpoint to reach the guard')
    t.same(guard.view().stores_failed, ['engine'])
    await t.rejects(
      engine.trigger('test-sop', event({ n: 2 })),
      { code: DISK_REFUSING },
      'new work is refused before it is written',
    )
    t.equal((await engine.getRun(first.runId!))?.state, 'running', 'the run waits, running')

    await rm(filler)
    await waitFor(() => !guard.refusing(), 'the guard to reopen the store and take work again', {
      timeoutMs: 30_000,
    })
    const done = await waitFor(async () => {
      const r = await engine.getRun(first.runId!)
      return r?.state === 'completed' ? r : undefined
    }, 'the waiting run to finish')
    t.same(done.steps[2]?.output, { done: true })
    const again = await engine.trigger('test-sop', event({ n: 3 }))
    t.equal(again.outcome, 'started', 'new work is taken again, no restart')
    await waitFor(() => tools.blockedCount() === 1, 'the new run to start')
    tools.release()
    await waitFor(
      async () => (await engine.getRun(again.runId!))?.state === 'completed',
      'the new run to finish',
    )

    t.same(
      log.lines.filter((l) => l.level === 'error').map((l) => l.msg),
      [],
      'no error line: the guard said it once, as a warning',
    )
    t.equal(log.lines.filter((l) => l.msg.startsWith('disk: refusing new work')).length, 1)
    t.equal(log.lines.filter((l) => l.msg === 'disk: the engine store is open again').length, 1)
  },
)
