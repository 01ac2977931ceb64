// Run changes kept while the link to the broker is busy (hub/mqtt-state/coalesce.ts): the latest
// per topic, in the order of each topic's latest change, sent once the link can take them, and
// dropped oldest first past the bound, with counts of each.
import t from 'tap'
import { coalescer } from '../../hub/mqtt-state/coalesce.ts'

function link(max = 100) {
  let busy = false
  const sent: string[] = []
  const c = coalescer({ busy: () => busy, send: (topic, payload) => sent.push(`${topic} ${payload}`), max })
  return { c, sent, setBusy: (b: boolean) => (busy = b) }
}

t.test('a free link sends at once; nothing is kept', async (t) => {
  const { c, sent } = link()
  c.offer('svc/runs/a/1', 'pending')
  c.offer('svc/runs/a/1', 'running')
  t.same(sent, ['svc/runs/a/1 pending', 'svc/runs/a/1 running'])
  t.equal(c.kept(), 0)
  t.equal(c.flush(), null, 'nothing to catch up')
})

t.test(
  'a busy link keeps the latest per topic, then sends them in order of their latest change',
  async (t) => {
    const { c, sent, setBusy } = link()
    setBusy(true)
    c.offer('svc/runs/a/1', 'pending')
    c.offer('svc/runs/a/2', 'pending')
    c.offer('svc/runs/a/1', 'running')
    c.offer('svc/runs/a/1', 'completed')
    t.same(sent, [], 'nothing sent while busy')
    t.equal(c.kept(), 2)
    t.equal(c.flush(), null, 'still busy: nothing sent, nothing reported')
    setBusy(false)
    // A change offered once the link is free but before the flush keeps its place behind the kept.
    c.offer('svc/runs/a/3', 'pending')
    t.same(sent, [], 'kept changes go first')
    t.same(c.flush(), { sent: 3, replaced: 2, dropped: 0 })
    t.same(sent, ['svc/runs/a/2 pending', 'svc/runs/a/1 completed', 'svc/runs/a/3 pending'])
    c.offer('svc/runs/a/4', 'pending')
    t.same(sent.at(-1), 'svc/runs/a/4 pending', 'caught up: sent at once again')
  },
)

t.test('a link that is busy again midway keeps the rest for the next flush', async (t) => {
  let free = 0
  const sent: string[] = []
  const c = coalescer({ busy: () => free-- <= 0, send: (topic) => sent.push(topic), max: 100 })
  for (let i = 0; i < 5; i++) c.offer(`r/${i}`, 'x')
  t.equal(c.kept(), 5)
  free = 2
  t.equal(c.flush(), null, 'not caught up')
  t.same(sent, ['r/0', 'r/1'])
  free = 10
  t.same(c.flush(), { sent: 5, replaced: 0, dropped: 0 }, 'the counts cover the whole episode')
  t.same(sent, ['r/0', 'r/1', 'r/2', 'r/3', 'r/4'])
})

t.test('past the bound the oldest kept is dropped, and counted', async (t) => {
  const { c, sent, setBusy } = link(3)
  setBusy(true)
  for (let i = 0; i < 5; i++) c.offer(`r/${i}`, 'x')
  t.equal(c.kept(), 3)
  setBusy(false)
  t.same(c.flush(), { sent: 3, replaced: 0, dropped: 2 })
  t.same(sent, ['r/2 x', 'r/3 x', 'r/4 x'])
})
