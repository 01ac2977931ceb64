// The watchdog's parts without systemd: the health decision (pure), what the environment asks
// for, the message format, the store heartbeat's states, and the pinger on real timers with an
// injected heartbeat and clock (a stalled loop is a clock that jumps). The whole service against
// a real notify socket is test/hub/watchdog.test.ts.
import t from 'tap'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { decideHealth, type HealthInput } from '../../hub/service/health.ts'
import { servingStatus } from '../../hub/service/index.ts'
import { notifyMessage, notifyTarget, watchdogAsk } from '../../hub/service/notify-env.ts'
import { openNotifier } from '../../hub/service/notify.ts'
import { boundsFor, startPinger } from '../../hub/service/pinger.ts'
import { refusingHonestly, storesRefusingWrites } from '../../hub/disk/refusing.ts'
import { StoreProbe } from '../../hub/service/store-probe.ts'
import type { Log } from '../../hub/log.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

function recordingLog(): Log & { lines: string[] } {
  const lines: string[] = []
  const at = (o: object | string, msg?: string) => void lines.push(typeof o === 'string' ? o : (msg ?? ''))
  return { lines, info: at, warn: at, error: at }
}

t.test('the health decision', async (t) => {
  const b = { maxLagMs: 500, maxWriteMs: 500 }
  const ok: HealthInput = { lagMs: 3, store: { kind: 'ok' }, refusing: false }
  t.same(decideHealth(ok, b), { ping: true, note: null }, 'loop on time, store took the heartbeat: ping')
  t.same(
    decideHealth({ ...ok, lagMs: 500 }, b),
    { ping: true, note: null },
    'a lag at the bound is still on time',
  )

  const stalled = decideHealth({ ...ok, lagMs: 1800 }, b)
  t.equal(stalled.ping, false, 'a check that ran late past the bound: no ping')
  t.match(stalled.note, /the event loop stalled: the watchdog check ran 1\.8 s late \(bound 0\.5 s\)/)
  t.equal(
    decideHealth({ ...ok, lagMs: 1800, refusing: true }, b).ping,
    false,
    'refusing work does not excuse a stalled loop',
  )

  const failed = decideHealth({ ...ok, store: { kind: 'failed', error: 'IO error: No space left' } }, b)
  t.same(failed, { ping: false, note: 'the engine store refuses writes: IO error: No space left' })

  t.same(
    decideHealth({ ...ok, store: { kind: 'pending', forMs: 120 } }, b),
    { ping: true, note: null },
    'a heartbeat under way for less than the bound',
  )
  const stuck = decideHealth({ ...ok, store: { kind: 'pending', forMs: 15_000 } }, b)
  t.same(stuck, { ping: false, note: 'an engine store write has waited 15.0 s without landing' })

  t.same(
    decideHealth({ ...ok, store: { kind: 'failed', error: 'x' }, refusing: true }, b),
    { ping: true, note: 'refusing new work: the disk is below its reserve' },
    'refusing new work on purpose keeps the pings (a restart would not free the disk)',
  )
  t.same(
    decideHealth({ ...ok, failedStores: [{ store: 'attest', error: 'IO error: Read-only file system' }] }, b),
    { ping: false, note: 'the attest store refuses writes: IO error: Read-only file system' },
    'another store that refuses writes with room on the disk: no ping (a restart may cure it)',
  )
  t.same(
    decideHealth({ ...ok, refusing: true, failedStores: [{ store: 'attest', error: 'x' }] }, b),
    { ping: true, note: 'refusing new work: the disk is below its reserve' },
    'while the disk is short, a failed store waits for room and the pings go on',
  )
  t.equal(refusingHonestly(), false, 'no hub in this process refuses for want of disk')
  t.same(storesRefusingWrites(), [], 'and no store of one refuses writes')
  t.same(boundsFor(15_000), { maxLagMs: 7_500, maxWriteMs: 7_500 }, 'bounds: half a ping interval')
})

t.test('what the environment asks for', async (t) => {
  t.same(notifyTarget({}), { kind: 'none' }, 'no service manager: nothing')
  t.same(notifyTarget({ SVC_NOTIFY_FD: '3', NOTIFY_SOCKET: '/run/systemd/notify' }), { kind: 'fd', fd: 3 })
  t.match(notifyTarget({ SVC_NOTIFY_FD: '1' }), {
    kind: 'unusable',
    reason: /SVC_NOTIFY_FD=1: not a descriptor/,
  })
  t.match(notifyTarget({ SVC_NOTIFY_FD: 'three' }), { kind: 'unusable', reason: /SVC_NOTIFY_FD=three/ })
  t.match(
    notifyTarget({ NOTIFY_SOCKET: '@/org/freedesktop/systemd1/notify' }),
    {
      kind: 'unusable',
      reason:
        /NOTIFY_SOCKET=@\/org\/freedesktop\/systemd1\/notify is set, but the hub was not started through hub\/service\/notify-socket\.pl.*svc hub install-service/,
    },
    'a NOTIFY_SOCKET the hub cannot reach is named, with the way to fix it',
  )

  t.same(watchdogAsk({}, 42), { kind: 'off' })
  t.same(
    watchdogAsk({ WATCHDOG_USEC: '30000000' }, 42),
    { kind: 'on', pingEveryMs: 15_000 },
    'half of WatchdogSec',
  )
  t.same(watchdogAsk({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '42' }, 42), {
    kind: 'on',
    pingEveryMs: 15_000,
  })
  t.same(
    watchdogAsk({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '7' }, 42),
    { kind: 'off' },
    "another process's watchdog",
  )
  for (const bad of ['0', '-5', '1.5', 'soon'])
    t.match(watchdogAsk({ WATCHDOG_USEC: bad }, 42), {
      kind: 'bad',
      reason: `WATCHDOG_USEC=${bad}: not a positive`,
    })
})

t.test('messages: KEY=VALUE lines, each value one line', async (t) => {
  t.equal(notifyMessage({ READY: '1', STATUS: 'serving: 2 SOPs' }), 'READY=1\nSTATUS=serving: 2 SOPs')
  t.equal(
    notifyMessage({ STATUS: 'a\nWATCHDOG=1\r\nb' }),
    'STATUS=a WATCHDOG=1 b',
    'a newline in a value cannot forge another assignment',
  )
  t.equal(servingStatus({ sops: 1, invalid: 0, boards: 1 }), 'serving: 1 SOP, 1 board')
  t.equal(servingStatus({ sops: 3, invalid: 2, boards: 0 }), 'serving: 3 SOPs (2 not loaded), 0 boards')
})

t.test('a descriptor that is not a socket is refused, with a warning', async (t) => {
  const dir = await tempDir(t)
  const fh = await open(join(dir, 'not-a-socket'), 'w')
  t.teardown(() => fh.close())
  const log = recordingLog()
  t.equal(openNotifier({ kind: 'fd', fd: fh.fd }, log), null)
  t.match(log.lines, [new RegExp(`SVC_NOTIFY_FD=${fh.fd} is not a socket`)])
  const log2 = recordingLog()
  t.equal(openNotifier({ kind: 'fd', fd: 987_654 }, log2), null)
  t.match(log2.lines, [/SVC_NOTIFY_FD=987654 is not open/])
  t.equal(openNotifier({ kind: 'none' }, log2), null, 'no manager: no notifier, nothing logged')
  t.equal(log2.lines.length, 1)
})

/** A heartbeat the test settles by hand. */
function manualHeartbeats() {
  const calls: { resolve: () => void; reject: (e: Error) => void }[] = []
  const heartbeat = () =>
    new Promise<void>((resolve, reject) => {
      calls.push({ resolve, reject })
    })
  return { calls, heartbeat }
}

t.test('the store heartbeat: pending, landed, refused; one in flight at a time', async (t) => {
  let now = 1000
  const h = manualHeartbeats()
  const probe = new StoreProbe(h.heartbeat, () => now)
  probe.begin()
  now = 1300
  t.same(probe.state(), { kind: 'pending', forMs: 300 })
  probe.begin()
  t.equal(h.calls.length, 1, 'no second heartbeat behind one that has not landed')
  h.calls[0]!.resolve()
  await Promise.resolve()
  t.same(probe.state(), { kind: 'ok' })
  probe.begin()
  h.calls[1]!.reject(new Error('IO error: disk full'))
  await Promise.resolve()
  t.same(probe.state(), { kind: 'failed', error: 'IO error: disk full' })
  probe.begin()
  h.calls[2]!.resolve()
  await Promise.resolve()
  t.same(probe.state(), { kind: 'ok' }, 'a store that takes writes again is healthy again')
})

t.test('the pinger: pings while healthy, withholds and says why, resumes', async (t) => {
  const sent: Record<string, string>[] = []
  const log = recordingLog()
  let offset = 0
  let failing = false
  let refusing = false
  const pinger = startPinger({
    pingEveryMs: 200,
    send: (f) => void sent.push(f),
    heartbeat: () =>
      failing ? Promise.reject(new Error('IO error: read-only file system')) : Promise.resolve(),
    refusing: () => refusing,
    serving: 'serving: 1 SOP, 0 boards',
    log,
    now: () => performance.now() + offset,
  })
  t.teardown(() => pinger.stop())
  const pings = () => sent.filter((f) => f.WATCHDOG === '1').length
  await waitFor(() => pings() >= 2, 'pings while healthy')

  failing = true
  const sickAt = await waitFor(
    () =>
      sent.findIndex(
        (f) => f.STATUS === 'unhealthy: the engine store refuses writes: IO error: read-only file system',
      ) + 1,
    'the unhealthy status, saying why',
  )
  await waitFor(
    () => log.lines.filter((l) => l.startsWith('watchdog ping withheld')).length >= 3,
    'withheld pings',
  )
  t.equal(
    sent.slice(sickAt - 1).filter((f) => f.WATCHDOG).length,
    0,
    'no ping while the store refuses writes',
  )

  refusing = true
  const refusingAt = await waitFor(
    () => sent.findIndex((f) => f.STATUS === 'refusing new work: the disk is below its reserve') + 1,
    'the refusing status',
  )
  await waitFor(() => sent.slice(refusingAt).some((f) => f.WATCHDOG), 'pings while refusing honestly')

  refusing = false
  failing = false
  const back = await waitFor(
    () => sent.findIndex((f, i) => i >= refusingAt && f.STATUS === 'serving: 1 SOP, 0 boards') + 1,
    'the serving status again',
  )
  await waitFor(() => sent.slice(back).some((f) => f.WATCHDOG), 'pings again')

  // A stalled loop: the clock jumps a second between two checks, as if the loop gave no turn.
  const before = sent.length
  offset += 1000
  const stallAt = await waitFor(
    () =>
      sent.findIndex((f, i) => i >= before && f.STATUS?.startsWith('unhealthy: the event loop stalled')) + 1,
    'the stalled status',
  )
  t.notOk(sent[stallAt - 1]!.WATCHDOG, 'no ping for the late check')
  await waitFor(() => sent.slice(stallAt).some((f) => f.WATCHDOG), 'pings once the loop turns on time again')
  t.ok(log.lines.includes('watchdog pings resumed'))

  pinger.setServing('serving: 2 SOPs, 0 boards')
  t.same(sent.at(-1), { STATUS: 'serving: 2 SOPs, 0 boards' }, 'a new serving status is sent at once')
  pinger.stop()
  const stoppedAt = sent.length
  await new Promise((r) => setTimeout(r, 100))
  t.equal(sent.length, stoppedAt, 'nothing after stop()')
})
