// The group committer (hub/engine/group-commit.ts): writers share syncs, none is told "stored"
// before its batch is written, and a deferrable write rides in the next write's batch.
import t from 'tap'
import { waitFor } from '../helpers/wait.ts'
import {
  DEFER_MAX_MS,
  DEFER_MS,
  GroupCommitter,
  type WriteBatch,
  deferFor,
} from '../../hub/engine/group-commit.ts'

/** A batch writer that holds each batch until released, and keeps what it was given. */
function heldWriter() {
  const batches: { key: string; value?: string; type: string }[][] = []
  const waiting: (() => void)[] = []
  const write: WriteBatch = (ops) => {
    batches.push(ops)
    return new Promise<void>((r) => waiting.push(r))
  }
  return { write, batches, releaseOne: () => waiting.shift()?.() }
}

const settle = () => new Promise((r) => setImmediate(r))

t.test(
  'writers in one turn share a batch; later ones wait for the next and are not resolved early',
  async (t) => {
    const w = heldWriter()
    const c = new GroupCommitter(w.write)
    const done: string[] = []
    void c.write([{ type: 'put', key: 'a', value: '1' }]).then(() => done.push('a'))
    void c.write([{ type: 'put', key: 'b', value: '1' }]).then(() => done.push('b'))
    await settle()
    t.equal(w.batches.length, 1, 'one batch for the two writers of one turn')
    t.same(
      w.batches[0]!.map((o) => o.key),
      ['a', 'b'],
    )
    void c.write([{ type: 'put', key: 'c', value: '1' }]).then(() => done.push('c'))
    await settle()
    t.equal(w.batches.length, 1, 'a write while a batch is on disk waits for the next')
    t.same(done, [], 'nobody is told stored before the sync')
    w.releaseOne()
    await waitFor(() => w.batches.length === 2, 'the next batch')
    t.same(done, ['a', 'b'], "the first batch's writers, once it is written")
    w.releaseOne()
    await c.drain()
    t.same(done, ['a', 'b', 'c'])
  },
)

t.test('a deferrable write joins the next write that cannot wait: one sync for both', async (t) => {
  const w = heldWriter()
  const c = new GroupCommitter(w.write)
  const done: string[] = []
  void c.write([{ type: 'put', key: 'fin', value: 'x' }], { defer: true }).then(() => done.push('fin'))
  await settle()
  t.equal(w.batches.length, 0, 'the deferrable write waits')
  void c.write([{ type: 'put', key: 'adm', value: 'y' }]).then(() => done.push('adm'))
  await settle()
  t.equal(w.batches.length, 1, 'the urgent write starts the batch at once')
  t.same(
    w.batches[0]!.map((o) => o.key),
    ['fin', 'adm'],
    'and carries the deferred one',
  )
  w.releaseOne()
  await c.drain()
  t.same(done.sort(), ['adm', 'fin'])
})

t.test('a deferrable write alone is still written, and drain() does not wait for the delay', async (t) => {
  const w = heldWriter()
  const c = new GroupCommitter(w.write)
  let stored = false
  void c.write([{ type: 'put', key: 'fin', value: 'x' }], { defer: true }).then(() => (stored = true))
  // By itself (no other writer comes): the timer starts its batch.
  await waitFor(() => w.batches.length === 1, 'the deferred batch')
  w.releaseOne()
  await c.drain()
  t.ok(stored, 'written without another writer')
  void c.write([{ type: 'put', key: 'fin2', value: 'x' }], { defer: true })
  const drained = c.drain()
  await settle()
  t.equal(w.batches.length, 2, 'drain() starts a waiting deferred batch at once')
  w.releaseOne()
  await drained
})

t.test(
  'a lazy write rides with the next write however late; alone, it is written after its wait',
  async (t) => {
    const w = heldWriter()
    const c = new GroupCommitter(w.write, 0, 200)
    const done: string[] = []
    void c.write([{ type: 'del', key: 'mark' }], { lazy: true }).then(() => done.push('mark'))
    // Longer than a deferred write would wait (DEFER_MS): the lazy one still waits.
    await new Promise((r) => setTimeout(r, DEFER_MS * 4))
    t.equal(w.batches.length, 0, 'the lazy write waits')
    void c.write([{ type: 'put', key: 'fin', value: 'x' }], { defer: true }).then(() => done.push('fin'))
    await waitFor(() => w.batches.length === 1, 'the deferred write, at its own time')
    t.same(
      w.batches[0]!.map((o) => o.key),
      ['mark', 'fin'],
      'a deferred write does not wait as long as the lazy one: both go at its time',
    )
    w.releaseOne()
    await waitFor(() => done.length === 2, 'both stored')
    const started = Date.now()
    void c.write([{ type: 'del', key: 'mark2' }], { lazy: true }).then(() => done.push('mark2'))
    await waitFor(() => w.batches.length === 2, 'the lazy write alone')
    t.ok(Date.now() - started >= 150, `written alone only after its wait (${Date.now() - started} ms)`)
    w.releaseOne()
    await c.drain()
    t.same(done, ['mark', 'fin', 'mark2'])
  },
)

t.test(
  'operations go in arrival order; a failed batch rejects its writers, the next goes through',
  async (t) => {
    let fail = true
    const seen: { key: string; value?: string; type: string }[][] = []
    const c = new GroupCommitter(async (ops) => {
      seen.push(ops)
      if (fail) {
        fail = false
        throw new Error('disk full')
      }
    })
    const a = c.write([{ type: 'put', key: 'k', value: '1' }])
    const b = c.write([
      { type: 'put', key: 'k', value: '2' },
      { type: 'del', key: 'j' },
    ])
    await t.rejects(a, /disk full/)
    await t.rejects(b, /disk full/)
    t.same(
      seen[0]!.map((o) => `${o.type} ${o.key} ${o.value ?? ''}`),
      ['put k 1', 'put k 2', 'del j '],
      'in the order handed in (LevelDB keeps the later of two on a key)',
    )
    await c.write([{ type: 'del', key: 'k' }])
    t.same(seen[1], [{ type: 'del', key: 'k' }], 'the next batch goes through')
  },
)

t.test('a final record waits for the next admission while events come steadily, else 5 ms', async (t) => {
  t.equal(deferFor(1000, 1000, Number.POSITIVE_INFINITY), DEFER_MS, 'the first event: nothing to go by')
  t.equal(
    deferFor(1010, 1000, 1000),
    1000 - 10 + 250,
    'a second apart: until a quarter gap after the next is due',
  )
  t.equal(deferFor(1005, 1000, 20), 20 - 5 + 5, '50 a second: until just after the next')
  t.equal(deferFor(1000, 1000, 5000), DEFER_MS, 'events further apart than DEFER_MAX_MS: no long wait')
  t.equal(deferFor(4000, 1000, 1000), DEFER_MS, 'the stream stopped (no event for two gaps): no long wait')
  t.ok(deferFor(1000, 1000, 1900) <= DEFER_MAX_MS, 'never past DEFER_MAX_MS')
})
