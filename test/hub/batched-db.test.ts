// The broker's coalesced LevelDB (hub/broker/batched-db.ts), on a real LevelDB in a temp folder:
// reads see every write made before them, writes of one turn share a batch, what was reported
// written is on disk, and a failed batch fails its writers and leaves no stale value in memory.
import t from 'tap'
import { join } from 'node:path'
import { Level } from 'level'
import { type LevelLike, MAX_CACHED, batchedDb } from '../../hub/broker/batched-db.ts'
import { tempDir } from '../helpers/tmp.ts'

const enc = { valueEncoding: 'buffer' } as const

async function open(t: Parameters<typeof tempDir>[0], path?: string) {
  const dir = path ?? join(await tempDir(t), 'db')
  const level = new Level<string, Buffer>(dir, enc)
  await level.open()
  return { dir, level, db: batchedDb(level as unknown as LevelLike) }
}

t.test('writes of one turn are one batch, read back at once, and on disk once reported', async (t) => {
  const { dir, db } = await open(t)
  const writes = []
  for (let i = 0; i < 100; i++)
    writes.push(db.put(`k:${String(i).padStart(3, '0')}`, Buffer.from(`v${i}`), enc))
  // Before the batch is written, a read gets the value from memory.
  t.equal((await db.get('k:042', enc))?.toString(), 'v42')
  await Promise.all(writes)
  t.equal(db.stats.batches, 1, 'a hundred puts of one turn: one LevelDB batch')
  t.equal(db.stats.ops, 100)
  t.equal(db.stats.hits, 1)
  await db.close()
  const again = new Level<string, Buffer>(dir, enc)
  await again.open()
  t.equal((await again.get('k:099'))?.toString(), 'v99', 'the write is in LevelDB')
  await again.close()
})

t.test('deletes, chained batches and array batches; the last write of a key wins', async (t) => {
  const { db, level } = await open(t)
  await db.put('a', Buffer.from('1'), enc)
  const chained = db.batch() as unknown as {
    put(k: string, v: Buffer): unknown
    del(k: string): unknown
    write(): Promise<void>
  }
  chained.del('a')
  chained.put('b', Buffer.from('2'))
  const w = chained.write()
  t.equal(await db.get('a', enc), undefined, 'deleted: a read says so before the batch is written')
  await w
  await (db.batch([
    { type: 'put', key: 'c', value: Buffer.from('3') },
    { type: 'del', key: 'c' },
    { type: 'put', key: 'c', value: Buffer.from('4') },
  ]) as Promise<void>)
  t.equal((await level.get('c'))?.toString(), '4', 'on disk: the last of three writes of one key')
  t.equal(await level.get('a'), undefined)
  t.equal((await level.get('b'))?.toString(), '2')
  t.equal((await db.get('missing', enc)) ?? null, null, 'a key never written is read from LevelDB')
  t.equal(db.stats.misses, 1)
  await db.close()
})

t.test('iterators and clear wait for the writes made before them', async (t) => {
  const { db } = await open(t)
  void db.put('p:1', Buffer.from('x'), enc)
  void db.put('p:2', Buffer.from('y'), enc)
  void db.put('q:1', Buffer.from('z'), enc)
  const seen: string[] = []
  for await (const v of db.values({ gte: 'p:', lt: 'p;', ...enc })) seen.push(v.toString())
  t.same(seen, ['x', 'y'], 'values() saw both puts still unwritten when it was called')
  void db.put('p:3', Buffer.from('w'), enc)
  await db.clear({ gte: 'p:', lt: 'p;' })
  t.equal(await db.get('p:1', enc), undefined, 'cleared: not answered from memory')
  t.equal(await db.get('p:3', enc), undefined, 'a put made before clear() is cleared too')
  t.equal((await db.get('q:1', enc))?.toString(), 'z')
  await db.close()
})

t.test('a batch that fails rejects its writers and forgets their values', async (t) => {
  const { db, level } = await open(t)
  await db.put('kept', Buffer.from('1'), enc)
  await level.close()
  const p = db.put('lost', Buffer.from('2'), enc)
  await t.rejects(p, 'the write is reported failed')
  await t.rejects(db.get('lost', enc), 'the read goes to LevelDB (closed here), not to memory')
})

t.test('memory is bounded: past MAX_CACHED the written values are let go, reads go to LevelDB', async (t) => {
  const { db } = await open(t)
  const writes = []
  for (let i = 0; i <= MAX_CACHED; i++) writes.push(db.put(`m:${i}`, Buffer.from(String(i)), enc))
  await Promise.all(writes)
  await db.put('after', Buffer.from('a'), enc)
  const before = db.stats.misses
  t.equal((await db.get('m:7', enc))?.toString(), '7', 'still read correctly')
  t.equal(db.stats.misses, before + 1, 'from LevelDB')
  t.equal((await db.get('after', enc))?.toString(), 'a')
  await db.close()
})
