// The disk guard's edge (hub/disk/guard.ts): free space given by the test (the disk is the
// hardware edge here; the real one is filled in disk-full.test.ts), stores that reopen, and the
// log, the listeners and the watchdog's question as the guard answers them.
import t from 'tap'
import { createDiskGuard } from '../../hub/disk/guard.ts'
import { refusingHonestly } from '../../hub/disk/refusing.ts'
import type { Log } from '../../hub/log.ts'
import { waitFor } from '../helpers/wait.ts'

const MiB = 1024 * 1024

function recordingLog(): Log & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = []
  const at = (level: string) => (o: object | string, msg?: string) =>
    void lines.push({ level, msg: typeof o === 'string' ? o : (msg ?? '') })
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') }
}

function world() {
  let free = 100 * MiB
  let reads = 0
  let clock = 1000
  return {
    setFree: (n: number) => void (free = n),
    reads: () => reads,
    tick: (ms: number) => void (clock += ms),
    now: () => clock,
    spaceOf: async (_path: string) => {
      reads++
      return { free, size: 200 * MiB }
    },
  }
}

t.test('refuses below the reserve, once; resumes once; room() and the watchdog follow', async (t) => {
  const w = world()
  const log = recordingLog()
  const guard = createDiskGuard({
    dataDir: '/data',
    reserve: { mb: 10, percent: null },
    log,
    spaceOf: w.spaceOf,
    now: w.now,
    intervalMs: 60_000,
  })
  t.teardown(() => guard.stop())
  const views: string[] = []
  guard.onChange((v) => views.push(v.state))
  await guard.start()
  t.equal(guard.refusal(), null, 'room: work is taken')
  t.equal(refusingHonestly(), false)

  w.setFree(5 * MiB)
  await guard.read()
  await guard.read()
  t.equal(guard.refusing(), true)
  t.match(guard.refusal(), /below the reserve/)
  t.equal(refusingHonestly(), true, 'the watchdog hears the hub refuses on purpose')
  let roomy = false
  void guard.room().then(() => (roomy = true))
  t.same(
    log.lines.filter((l) => l.level === 'warn').map((l) => l.msg.slice(0, 30)),
    ['disk: refusing new work: free '],
    'one warning for two readings',
  )

  w.setFree(50 * MiB)
  await guard.read()
  await waitFor(() => roomy, 'room() to resolve')
  t.equal(guard.refusing(), false)
  t.same(views, ['refusing', 'ok'], 'listeners told of each change, not of each reading')
  t.equal(log.lines.filter((l) => l.msg.startsWith('disk: taking new work again')).length, 1)
  guard.stop()
  t.equal(refusingHonestly(), false, 'a stopped guard refuses nothing')
})

t.test('near the line a stale reading is read again before work is admitted; far from it, not', async (t) => {
  const w = world()
  const guard = createDiskGuard({
    dataDir: '/data',
    reserve: { mb: 10, percent: null },
    log: recordingLog(),
    spaceOf: w.spaceOf,
    now: w.now,
    intervalMs: 60_000,
    nearIntervalMs: 60_000,
  })
  t.teardown(() => guard.stop())
  await guard.start()
  const before = w.reads()
  w.tick(10_000)
  t.equal(guard.refusal(), null, 'far from the line: no read, no wait')
  t.equal(w.reads(), before)

  w.setFree(12 * MiB)
  await guard.read()
  w.setFree(2 * MiB)
  t.equal(guard.refusal(), null, 'a fresh reading is trusted')
  w.tick(1000)
  const answer = guard.refusal()
  t.type(answer, Promise, 'a stale one near the line is read again first')
  t.match(await answer, /below the reserve/, 'and the fill is caught before the work is taken')
})

t.test('a failed write: refuse, reopen the store once there is room, then resume', async (t) => {
  const w = world()
  const log = recordingLog()
  const guard = createDiskGuard({
    dataDir: '/data',
    reserve: { mb: 0, percent: null },
    log,
    spaceOf: w.spaceOf,
    now: w.now,
    intervalMs: 60_000,
    nearIntervalMs: 60_000,
  })
  t.teardown(() => guard.stop())
  let reopened = 0
  let failOpen = true
  guard.addStore({
    name: 'engine',
    path: '/data/engine',
    reopen: async () => {
      reopened++
      if (failOpen) throw new Error('no room to open')
    },
  })
  await guard.start()
  w.setFree(0)
  guard.writeFailed(
    'engine',
    Object.assign(new Error('IO error: No space left on device'), { code: 'LEVEL_IO_ERROR' }),
  )
  guard.writeFailed('engine', new Error('IO error: No space left on device'))
  t.equal(guard.refusing(), true)
  t.same(guard.view().stores_failed, ['engine'])
  await waitFor(() => log.lines.some((l) => l.level === 'warn'), 'the warning')
  t.match(
    log.lines.find((l) => l.level === 'warn')?.msg,
    /the engine store could not write .*0 B free on \/data/,
    'with the space read after the failure',
  )

  w.setFree(50 * MiB)
  await guard.read()
  await waitFor(() => reopened === 1, 'a reopen')
  await waitFor(() => log.lines.some((l) => l.msg.includes('did not open again')), 'the failed reopen said')
  t.equal(guard.refusing(), true, 'still refusing: the store is not open')
  failOpen = false
  w.tick(60_000)
  await guard.read()
  await waitFor(() => !guard.refusing(), 'the hub to take work again')
  t.equal(reopened, 2)
  t.equal(guard.view().stores_failed, undefined)
  t.equal(
    log.lines.filter((l) => l.level === 'warn').length,
    2,
    'two warnings in all: the refusal and the first failed reopen',
  )
})
