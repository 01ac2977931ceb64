// The MQTT intake's marks waiting to be forgotten (hub/triggers/intake.ts ForgetQueue): none is
// handed back before its time, all are once it comes, and none is held after that.
import t from 'tap'
import { ForgetQueue } from '../../hub/triggers/intake.ts'

const mark = (n: number) => ({ sop: 'peer', key: `from pub ${n % 65_535}`, fingerprint: `fp-${n}` })

t.test('marks come out at their time, in order, and are not held after', async (t) => {
  const q = new ForgetQueue()
  // 100,000 messages over 50 s, one or two marks each (a message may start two SOPs).
  let made = 0
  for (let n = 0; n < 100_000; n++) {
    const marks = n % 10 === 0 ? [mark(n), { ...mark(n), sop: 'other' }] : [mark(n)]
    made += marks.length
    q.add(marks, 1_000_000 + Math.floor(n / 2))
  }
  t.equal(q.size, made, 'all waiting')
  t.same(q.due(999_999), [], 'none before the first was acknowledged')
  const early = q.due(1_000_000 + 10_000)
  t.ok(early.length > 0, 'the first ten seconds are due')
  t.ok(
    early.every((m) => Number(m.fingerprint.slice(3)) <= 20_000),
    'none acknowledged after the cutoff',
  )
  t.same(early[0], mark(0), 'oldest first')
  const rest = q.due(Number.MAX_SAFE_INTEGER)
  t.equal(early.length + rest.length, made, 'every mark handed back once')
  t.equal(q.size, 0, 'none held once taken')
  q.add([mark(1)], 2_000_000)
  t.same(q.due(2_000_000), [mark(1)], 'the queue goes on after being emptied')
})

t.test('a bucket is due only once its latest mark is', async (t) => {
  const q = new ForgetQueue()
  q.add([mark(1)], 1_000)
  q.add([mark(2)], 1_900)
  t.same(q.due(1_500), [], 'the bucket holds a mark acknowledged after the cutoff')
  t.same(q.due(1_900), [mark(1), mark(2)])
})
