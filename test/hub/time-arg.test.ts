// Times on the command line and in query strings (hub/api/time-arg.ts).
import t from 'tap'
import { parseTimeArg } from '../../hub/api/time-arg.ts'

t.test('spans back from now, ISO dates and times, epoch ms; anything else named', async (t) => {
  const now = Date.UTC(2026, 10, 25, 15, 0, 0)
  t.same(parseTimeArg('30m', now), { ok: true, ms: now - 30 * 60_000 })
  t.same(parseTimeArg('2h', now), { ok: true, ms: now - 2 * 3_600_000 })
  t.same(parseTimeArg('7d', now), { ok: true, ms: now - 7 * 86_400_000 })
  t.same(parseTimeArg('2026-11-25', now), { ok: true, ms: Date.UTC(2026, 10, 25) })
  t.same(parseTimeArg('2026-11-25T14:00Z', now), { ok: true, ms: Date.UTC(2026, 10, 25, 14) })
  t.same(parseTimeArg('2026-11-25T14:00:00+01:00', now), { ok: true, ms: Date.UTC(2026, 10, 25, 13) })
  t.same(parseTimeArg(String(now), now), { ok: true, ms: now })
  for (const bad of ['yesterday', '2026-13-45', '30x', '-5m', '1', 'March 7', ''])
    t.match(
      parseTimeArg(bad, now),
      { ok: false, code: 'BAD_INPUT', error: /is not a time: give an ISO date/ },
      JSON.stringify(bad),
    )
})
