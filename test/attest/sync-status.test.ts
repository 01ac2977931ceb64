// The sync's state as people read it (svc attest status, GET /attest/status), and the CLI's bar.
import t from 'tap'
import { createStatusTracker } from '../../hub/attest/sync-status.ts'
import { progressBar, progressLine } from '../../cli/progress-bar.ts'

const T = Date.parse('2026-11-23T23:00:00Z')

t.test('syncing: lines/s and ETA from the run so far', async (t) => {
  const s = createStatusTracker()
  s.runStarted(1000, T)
  s.lineDone(250, T + 1000)
  const st = s.snapshot(T + 2000)
  t.equal(st.state, 'syncing')
  t.same(st.progress, { done: 250, total: 1000, linesPerSec: 125, etaSec: 6 })
  t.equal(st.line, 'syncing: 250/1000 lines, 125 lines/s, ETA 6s')
  t.equal(progressBar(st.progress!, 10), '[###.......] 250/1000 lines  125 lines/s  ETA 6s')
  t.equal(progressLine(st.progress!), 'sync: 250/1000 lines, 125 lines/s, ETA 6s')
  s.runEnded(T + 3000)
  t.match(s.snapshot(T + 3000), { state: 'idle', line: 'idle: nothing to send', progress: null })
})

t.test('waiting while rate-limited, then back; stuck names the nonce and replacements', async (t) => {
  const s = createStatusTracker()
  s.runStarted(10, T)
  s.rateLimited(T + 5000, T)
  t.match(s.snapshot(T + 1000), {
    state: 'waiting',
    line: 'waiting: RPC rate-limited until 2026-11-23T23:00:05Z',
    rateLimitedUntil: '2026-11-23T23:00:05Z',
  })
  t.equal(s.snapshot(T + 6000).state, 'syncing', 'the wait is over')
  s.stuck(41, 2, 'not mined within 60 s', T + 7000)
  t.match(s.snapshot(T + 7000), {
    state: 'stuck',
    line: 'stuck: nonce 41 replaced 2× (not mined within 60 s)',
    stuck: { nonce: 41, replaced: 2 },
  })
  s.unstuck(T + 8000)
  t.equal(s.snapshot(T + 8000).state, 'syncing')
  s.runFailed('chain: down', T + 9500, T + 9000)
  t.match(s.snapshot(T + 9000), {
    state: 'retrying',
    line: 'retrying at 2026-11-23T23:00:09Z: chain: down',
    lastError: 'chain: down',
  })
})
