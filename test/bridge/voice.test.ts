// The edge speaks: what a board drops is logged at a bounded rate with its running count, the
// summary flushed by a timer (not only when the next bad line arrives); its hello is published
// retained at boards/<b>/info; its counters retained at boards/<b>/stats, only when changed.
import t from 'tap'
import { createSimulatingBridge } from '../../boards/simulator/bridge.ts'
import { createRateLimitedWarn } from '../../bridge/log-limit.ts'
import { createStatsPublisher } from '../../bridge/stats-publisher.ts'
import type { BoardStats } from '../../bridge/types.ts'
import { waitFor } from '../helpers/wait.ts'
import { collect, connectClient, publishVia, startBroker } from './broker.ts'

interface Line {
  fields: Record<string, unknown>
  msg: string
}
function recorder() {
  const warns: Line[] = []
  return {
    warns,
    log: {
      info: () => undefined,
      warn: (fields: object | string, msg?: string) =>
        void warns.push({ fields: fields as Record<string, unknown>, msg: msg ?? '' }),
      error: () => undefined,
    },
  }
}

/** Timers the test fires by hand. */
function manualTimers() {
  let next = 1
  const pending = new Map<number, () => void>()
  return {
    set(fn: () => void) {
      const h = next++
      pending.set(h, fn)
      return h
    },
    clear(h: unknown) {
      pending.delete(h as number)
    },
    fire() {
      const all = [...pending.values()]
      pending.clear()
      for (const fn of all) fn()
    },
    get size() {
      return pending.size
    },
  }
}

t.test('rate-limited warnings: first at once, the rest summarised by the timer', async (t) => {
  const { warns, log } = recorder()
  let now = 0
  const timers = manualTimers()
  const w = createRateLimitedWarn(log, 1000, () => now, timers)
  w.warn('garbage', { garbage: 1 }, 'bad line')
  t.equal(warns.length, 1, 'the first is logged at once')
  for (let i = 2; i <= 5; i++) w.warn('garbage', { garbage: i }, 'bad line')
  t.equal(warns.length, 1, 'the rest within the interval are held back')
  t.equal(timers.size, 1, 'one timer holds the summary')
  now = 1000
  timers.fire()
  t.same(warns[1], {
    fields: { garbage: 5, suppressed: 4 },
    msg: 'bad line (4 more since the last report)',
  })
  w.warn('oversized', { oversized: 1 }, 'long line')
  t.equal(warns.length, 3, 'another kind has its own window')
  timers.fire()
  t.equal(warns.length, 3, 'nothing held back, no summary')
  // The window ends before its timer runs: the summary comes first, then the new line.
  w.warn('garbage', { garbage: 6 }, 'bad line')
  now = 5000
  w.warn('garbage', { garbage: 7 }, 'bad line')
  t.same(
    warns.slice(3).map((l) => l.fields),
    [{ garbage: 6, suppressed: 1 }, { garbage: 7 }],
  )
  w.warn('garbage', { garbage: 8 }, 'bad line')
  w.close()
  t.same(warns.at(-1)!.fields, { garbage: 8, suppressed: 1 }, 'close logs what is held back')
  t.equal(timers.size, 0, 'and leaves no timer')
})

t.test('stats are published only when changed, at the timer', async (t) => {
  let interval: (() => void) | undefined
  const published: string[] = []
  let events = 0
  const p = createStatsPublisher({
    intervalMs: 5000,
    boards: () => [{ name: 'vend1', stats: { events } as unknown as BoardStats }],
    publish: (board, payload) => void published.push(`${board} ${payload}`),
    setTimer: (fn) => {
      interval = fn
      return 1
    },
    clearTimer: () => {
      interval = undefined
    },
  })
  p.start()
  t.same(published, [], 'nothing at start')
  interval!()
  t.same(published, ['vend1 {"events":0}'])
  interval!()
  interval!()
  t.equal(published.length, 1, 'unchanged: not published again')
  events = 3
  interval!()
  t.same(published.at(-1), 'vend1 {"events":3}')
  events = 4
  p.stop()
  t.same(published.at(-1), 'vend1 {"events":4}', 'stop publishes the last change')
  t.equal(interval, undefined, 'and stops the timer')
})

t.test('a bridge logs overlong and garbage lines promptly; info and stats are retained', async (t) => {
  const broker = await startBroker(t)
  const hub = await connectClient(t, broker.url)
  const { warns, log } = recorder()
  const bridge = createSimulatingBridge({
    boards: [
      { name: 'vend1', port: '/sim/voice-vend1', simulate: { rate: 0 }, heartbeatMs: 0, lineCap: 100 },
    ],
    publish: publishVia(hub),
    log,
    warnIntervalMs: 100,
    statsIntervalMs: 50,
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  await waitFor(() => bridge.stats().boards.vend1!.state === 'online', 'online')
  const sim = bridge.simulated('vend1')!

  // Three overlong lines and four bad ones, one at a time, then nothing more.
  for (let i = 0; i < 3; i++) {
    sim.emitRaw(`${'x'.repeat(200)}\n`)
    await waitFor(() => bridge.stats().boards.vend1!.oversized === i + 1, `overlong line ${i + 1} counted`)
  }
  for (const line of ['not json', '{"event":"nope"}', '[1]', '{"id":"x"}']) {
    const before = bridge.stats().boards.vend1!.garbage
    sim.emitRaw(`${line}\n`)
    await waitFor(() => bridge.stats().boards.vend1!.garbage === before + 1, `${line} counted`)
  }
  // No further bad line comes: the timer alone brings the summaries with the running counts.
  await waitFor(() => warns.some((w) => w.fields.oversized === 3), 'the oversized summary')
  await waitFor(() => warns.some((w) => w.fields.garbage === 4), 'the garbage summary')
  const over = warns.filter((w) => w.fields.oversized !== undefined)
  t.match(over, [
    { fields: { board: 'vend1', lineCap: 100, oversized: 1 }, msg: 'line longer than the cap dropped whole' },
    { fields: { oversized: 3, suppressed: 2 }, msg: /\(2 more since the last report\)$/ },
  ])
  const bad = warns.filter((w) => w.fields.garbage !== undefined)
  t.match(bad, [
    { fields: { board: 'vend1', error: 'not JSON', line: '"not json"', garbage: 1 } },
    { fields: { garbage: 4, suppressed: 3 } },
  ])
  t.match(bridge.stats().boards.vend1, { oversized: 3, garbage: 4 })

  sim.emitEvents(2)
  await waitFor(() => bridge.stats().boards.vend1!.published === 2, 'two events acknowledged')
  const watcher = await collect(await connectClient(t, broker.url), 'boards/vend1/stats')
  await waitFor(
    () => watcher.got.some((m) => JSON.parse(m.payload).events === 2),
    'stats with both events published',
  )
  // A subscriber arriving later finds the board's facts retained.
  const late = await collect(await connectClient(t, broker.url), 'boards/vend1/+')
  await waitFor(() => late.got.some((m) => m.topic === 'boards/vend1/stats'), 'the retained stats')
  t.ok(late.got.find((m) => m.topic === 'boards/vend1/stats')!.retain, 'stats are retained')
  const info = late.got.find((m) => m.topic === 'boards/vend1/info')!
  t.ok(info.retain, 'info is retained')
  t.match(JSON.parse(info.payload), { name: 'vend1', fw: 'svc-companion/0.2.0' })
  const stats = JSON.parse(late.got.findLast((m) => m.topic === 'boards/vend1/stats')!.payload)
  t.match(stats, {
    kind: 'serial',
    state: 'online',
    // hello, the reply to the ping at open, four bad lines, two events (overlong ones are not lines)
    lines: 8,
    events: 2,
    garbage: 4,
    oversized: 3,
    reconnects: 0,
    last_event_at: /^\d{4}-/,
  })
})
