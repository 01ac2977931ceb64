// The disk guard's pure parts (hub/disk/): the reserve and the lines around it, the state machine
// that decides when the hub refuses new work and when it takes it again, and the words it shows.
import t from 'tap'
import { bytesText, nearLine, reserveBytes, resumeAt } from '../../hub/disk/reserve.ts'
import {
  type DiskState,
  FLAP_MS,
  initialState,
  type Reading,
  reopenWaitMs,
  step,
} from '../../hub/disk/state.ts'
import { diskLine, diskView, refuseMessage, resumeMessage } from '../../hub/disk/view.ts'
import { formatHubStatus } from '../../cli/hub-status.ts'
import { hubStatus } from '../../hub/api/status.ts'

const MiB = 1024 * 1024
const GiB = 1024 * MiB

t.test(
  'the reserve: the larger of the settings given; by default 64 MiB or 2%, at most a quarter',
  async (t) => {
    const none = { mb: null, percent: null }
    t.equal(reserveBytes(none, 32 * GiB), Math.ceil((32 * GiB * 2) / 100), '2% of a large disk')
    t.equal(reserveBytes(none, 1 * GiB), 64 * MiB, '64 MiB of a small one')
    t.equal(reserveBytes(none, 256 * GiB), 1 * GiB, 'at most 1 GiB of a very large one')
    t.equal(reserveBytes(none, 24 * MiB), 6 * MiB, 'never more than a quarter of a tiny one by default')
    t.equal(
      reserveBytes({ mb: 10, percent: null }, 24 * MiB),
      10 * MiB,
      'a reserve set by hand is taken as given',
    )
    t.equal(reserveBytes({ mb: null, percent: 10 }, 1000 * MiB), 100 * MiB)
    t.equal(reserveBytes({ mb: 1, percent: 10 }, 1000 * MiB), 100 * MiB, 'both: the larger')
    t.equal(reserveBytes({ mb: 0, percent: null }, 1000 * MiB), 0, 'zero: no reserve')
  },
)

t.test('the lines around it: resume a margin above, read before admitting when near', async (t) => {
  t.equal(resumeAt(0), MiB, 'at least 1 MiB over the reserve')
  t.equal(resumeAt(100 * MiB), 110 * MiB, 'a tenth of a larger one')
  t.ok(nearLine(10 * MiB, 6 * MiB))
  t.notOk(nearLine(100 * MiB, 6 * MiB))
  t.equal(bytesText(512), '512 B')
  t.equal(bytesText(6 * MiB), '6.0 MiB')
  t.equal(bytesText(300 * GiB), '300 GiB')
})

const reading = (free: number, reserve = 6 * MiB, path = '/data'): Reading => ({
  path,
  free,
  size: 32 * MiB,
  reserve,
})

function run(s: DiskState, ...events: Parameters<typeof step>[1][]) {
  const actions: ReturnType<typeof step>['actions'] = []
  for (const e of events) {
    const r = step(s, e)
    s = r.state
    actions.push(...r.actions)
  }
  return { s, actions }
}

t.test('below the reserve: refuse once; back above the margin: resume once', async (t) => {
  let { s, actions } = run(
    initialState(0),
    { kind: 'read', at: 1, readings: [reading(20 * MiB)] },
    { kind: 'read', at: 2, readings: [reading(5 * MiB)] },
    { kind: 'read', at: 3, readings: [reading(4 * MiB)] },
  )
  t.equal(s.mode, 'refusing')
  t.same(
    actions.map((a) => a.kind),
    ['refuse'],
    'one refusal for readings below the line, however many',
  )
  t.same(s.cause, { kind: 'reserve', path: '/data' })
  ;({ s, actions } = run(s, { kind: 'read', at: 4, readings: [reading(6.5 * MiB)] }))
  t.equal(s.mode, 'refusing', 'above the reserve but within the margin: still refusing')
  t.same(actions, [])
  ;({ s, actions } = run(s, { kind: 'read', at: 10, readings: [reading(8 * MiB)] }))
  t.equal(s.mode, 'ok')
  t.same(actions, [{ kind: 'resume', refusedMs: 8, reading: reading(8 * MiB) }])
})

t.test('the worst of several paths decides, and is the one named', async (t) => {
  const { s } = run(initialState(0), {
    kind: 'read',
    at: 1,
    readings: [reading(20 * MiB, 6 * MiB, '/data'), reading(MiB, 2 * MiB, '/mnt/engine')],
  })
  t.equal(s.mode, 'refusing')
  t.same(diskView(s).path, '/mnt/engine')
})

t.test('a write that fails: refuse once, reopen when there is room, then resume', async (t) => {
  let { s, actions } = run(
    initialState(0),
    { kind: 'read', at: 1, readings: [reading(20 * MiB, 0)] },
    { kind: 'write-failed', at: 2, store: 'engine', error: 'IO error: No space left on device' },
    { kind: 'write-failed', at: 3, store: 'engine', error: 'IO error again' },
    { kind: 'write-failed', at: 4, store: 'broker', error: 'IO error' },
  )
  t.same(
    actions.map((a) => a.kind),
    ['refuse'],
    'one refusal for every failure',
  )
  t.same(
    s.failed.map((f) => [f.store, f.error]),
    [
      ['engine', 'IO error: No space left on device'],
      ['broker', 'IO error'],
    ],
    'each store once, with its first error',
  )
  ;({ s, actions } = run(s, { kind: 'read', at: 5, readings: [reading(100 * 1024, 0)] }))
  t.same(actions, [], 'no reopen while the disk is still full')
  ;({ s, actions } = run(
    s,
    { kind: 'read', at: 6, readings: [reading(20 * MiB, 0)] },
    { kind: 'read', at: 7, readings: [reading(20 * MiB, 0)] },
  ))
  t.same(actions, [{ kind: 'reopen', stores: ['engine', 'broker'] }], 'one reopen, not one per reading')
  t.equal(s.mode, 'refusing', 'still refusing while the stores reopen')
  ;({ s, actions } = run(s, { kind: 'reopened', at: 8, stores: ['engine', 'broker'], failed: [] }))
  t.equal(s.mode, 'ok')
  t.same(
    actions.map((a) => a.kind),
    ['resume'],
  )
  t.same(s.failed, [])
})

t.test('a reopen that fails is tried again later, with a growing wait', async (t) => {
  let { s, actions } = run(
    initialState(0),
    { kind: 'read', at: 1, readings: [reading(20 * MiB, 0)] },
    { kind: 'write-failed', at: 2, store: 'engine', error: 'e' },
    { kind: 'read', at: 3, readings: [reading(20 * MiB, 0)] },
    { kind: 'reopened', at: 4, stores: ['engine'], failed: [{ store: 'engine', error: 'no room to open' }] },
  )
  t.same(actions.at(-1), {
    kind: 'reopen-failed',
    failed: [{ store: 'engine', error: 'no room to open' }],
    retryInMs: reopenWaitMs(1),
  })
  ;({ s, actions } = run(s, { kind: 'read', at: 5, readings: [reading(20 * MiB, 0)] }))
  t.same(actions, [], 'not before the wait is over')
  ;({ s, actions } = run(s, { kind: 'read', at: 4 + reopenWaitMs(1), readings: [reading(20 * MiB, 0)] }))
  t.same(actions, [{ kind: 'reopen', stores: ['engine'] }])
  t.equal(s.failed[0]?.error, 'no room to open', 'the latest error is kept')
})

t.test('trouble again soon after resuming: said as such, and reopens wait longer', async (t) => {
  let { s } = run(
    initialState(0),
    { kind: 'read', at: 1, readings: [reading(20 * MiB, 0)] },
    { kind: 'write-failed', at: 2, store: 'engine', error: 'e' },
    { kind: 'read', at: 3, readings: [reading(20 * MiB, 0)] },
    { kind: 'reopened', at: 4, stores: ['engine'], failed: [] },
  )
  t.equal(s.mode, 'ok')
  let actions
  ;({ s, actions } = run(s, { kind: 'write-failed', at: 5, store: 'engine', error: 'e' }))
  t.same(actions[0]?.kind === 'refuse' && actions[0].again, true, 'the refusal says "again"')
  ;({ s, actions } = run(s, { kind: 'read', at: 6, readings: [reading(20 * MiB, 0)] }))
  t.same(actions, [], 'the reopen waits')
  t.equal(s.reopenAfter, 5 + reopenWaitMs(1))
  ;({ s } = run(s, { kind: 'read', at: s.reopenAfter, readings: [reading(20 * MiB, 0)] }))
  ;({ s } = run(s, { kind: 'reopened', at: s.reopenAfter + 1, stores: ['engine'], failed: [] }))
  const later = s.resumedAt + FLAP_MS + 1
  ;({ s, actions } = run(s, { kind: 'write-failed', at: later, store: 'engine', error: 'e' }))
  t.same(actions[0]?.kind === 'refuse' && actions[0].again, false, 'a minute later it is new trouble')
  t.equal(s.reopenAfter, later, 'with no wait')
})

t.test('what the hub shows: the view, the status line, the log lines', async (t) => {
  const { s } = run(initialState(Date.parse('2026-01-02T03:04:05Z')), {
    kind: 'read',
    at: Date.parse('2026-01-02T03:04:06Z'),
    readings: [reading(3 * MiB)],
  })
  const v = diskView(s)
  t.same(v, {
    state: 'refusing',
    free_bytes: 3 * MiB,
    reserve_bytes: 6 * MiB,
    path: '/data',
    since: '2026-01-02T03:04:06.000Z',
    reason: 'free space on /data is below the reserve',
  })
  t.equal(
    diskLine({ ...v, stores_failed: ['engine'], held_events: 3 }),
    'REFUSING new work since 2026-01-02T03:04:06.000Z: free space on /data is below the reserve (3.0 MiB free on /data, reserve 6.0 MiB); waiting to reopen engine; 3 events held unacknowledged',
  )
  t.equal(diskLine(diskView(initialState(0))), 'ok: no reading yet', 'before the first reading')
  t.match(
    refuseMessage({ kind: 'reserve', path: '/data' }, reading(3 * MiB), false),
    /^disk: refusing new work: /,
  )
  t.match(
    refuseMessage({ kind: 'write', store: 'engine', error: 'IO' }, null, true),
    /^disk: refusing new work again: the engine store could not write \(IO\)/,
  )
  t.equal(
    resumeMessage(4200, reading(20 * MiB)),
    'disk: taking new work again after 4 s (20.0 MiB free on /data, reserve 6.0 MiB)',
  )

  const status = hubStatus({
    snapshot: {
      since: 0,
      now: 1000,
      clientId: 'c',
      version: 'v',
      sops: { loaded: 1, invalid: 0 },
      boards: {},
      live: [],
      kept: [],
      disk: v,
    },
    pid: 1,
    broker: { embedded: true, url: 'mqtt://127.0.0.1:1883', connected: true },
    backlog: null,
  })
  t.same(status.disk, v, 'GET /hub/status carries it as svc/hub/state does')
  t.match(formatHubStatus(status), /^disk +REFUSING new work since /m, 'svc hub status prints it')
})
