// Run ids (hub/engine/run-id.ts): RFC 9562 UUIDv7 made from the creation time, in creation order,
// with random bytes drawn from a pool that is refilled as it runs out.
import t from 'tap'
import { runId } from '../../hub/engine/run-id.ts'

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The milliseconds a UUIDv7 carries in its first 48 bits. */
const msOf = (id: string): number => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)

t.test('an id is a UUIDv7 carrying its run creation time', async (t) => {
  const at = Date.UTC(2026, 10, 28, 12, 0, 0, 123)
  const id = runId(at + 0.6)
  t.match(id, UUID7)
  t.equal(msOf(id), at, 'the time part is the creation time in whole milliseconds')
})

t.test('ids keep creation order and never repeat, past many refills of the random pool', async (t) => {
  const start = Date.UTC(2026, 10, 28)
  // 20,000 ids: the pool of 4 KiB gives 256 ids a fill, so this draws it about 80 times.
  const ids: string[] = []
  for (let i = 0; i < 20_000; i++) ids.push(runId(start + Math.floor(i / 7)))
  t.equal(new Set(ids).size, ids.length, 'every id is different')
  const sorted = [...ids].sort()
  t.same(sorted, ids, 'sorted as text, ids are in the order they were made')
  t.ok(
    ids.every((id) => UUID7.test(id)),
    'every one a UUIDv7',
  )
  // The last 48 bits come from the pool: ids made one after another do not share them.
  const tails = new Set(ids.map((id) => id.slice(-12)))
  t.ok(tails.size > ids.length * 0.99, `random tails are spread (${tails.size} distinct of ${ids.length})`)
})
