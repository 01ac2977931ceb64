// The stores a full disk can fail, opened again once there is room (hub/disk/): the attestation
// store and the embedded broker's LevelDB (hub/disk/reopenable-level.ts), on a real tmpfs the
// test fills and frees. A failed write is reported once per failed batch; after the reopen writes
// go through, the counters read back from disk, and nothing written before is lost.
import t from 'tap'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import { type AppendInput, openAttestStore } from '../../hub/attest/store.ts'
import { openReopenable } from '../../hub/disk/reopenable-level.ts'
import { isStoreIoError } from '../../hub/disk/errors.ts'
import { lineHash } from '../../records/hash.ts'
import { fillDisk as fillUp, smallDisk } from '../helpers/small-disk.ts'

const { path: mnt, error: mountError } = await smallDisk(t, 8, 'svc-small-disk-')
const skip = mountError ? `needs a small tmpfs to fill (mount as root on Linux): ${mountError}` : false

const filler = join(mnt, 'filler')
const fillDisk = () => fillUp(filler)

const input = (i: number): AppendInput => ({
  idempotencyKey: `k${i}`,
  action: 'a',
  requestUri: 'u',
  // Lines large enough to need fresh pages of the log on a full disk.
  line: JSON.stringify({ i, pad: 'x'.repeat(32 * 1024) }),
  paramsHash: lineHash(`{"i":${i}}`),
  signature: `0x${'11'.repeat(65)}`,
  signer: '0x0000000000000000000000000000000000000001',
})

t.test(
  'the attestation store: a failed append reported, the store reopened, appends go on',
  { skip },
  async (t) => {
    const store = await openAttestStore(join(mnt, 'attest'))
    t.teardown(() => store.close())
    const errors: unknown[] = []
    store.onWriteError((err) => errors.push(err))
    await store.append(input(1))
    await fillDisk()
    await t.rejects(
      store.append(input(2)),
      { code: 'LEVEL_IO_ERROR' },
      'an append the disk cannot take fails',
    )
    await rm(filler)
    await t.rejects(
      store.append(input(4)),
      { code: 'LEVEL_IO_ERROR' },
      'and so does the next, until a reopen',
    )
    t.equal(errors.length, 1, 'reported once')
    t.ok(isStoreIoError(errors[0]))
    await store.reopen()
    const { record } = await store.append(input(3))
    t.equal(store.counts().total, record.seq + 1, 'the counters read back from disk agree with the lines')
    t.equal((await store.get(0))?.idempotencyKey, 'k1', 'the line written before is kept')
    t.equal((await store.byIdempotencyKey('k3'))?.seq, record.seq)
  },
)

t.test(
  'the broker LevelDB: no write taken after one failed, until it is opened again',
  { skip },
  async (t) => {
    const errors: unknown[] = []
    const db = await openReopenable(
      () => new Level<string, Buffer>(join(mnt, 'broker'), { valueEncoding: 'buffer' }),
      (err) => errors.push(err),
    )
    t.teardown(() => db.close())
    await db.put('before', Buffer.from('kept'))
    await fillDisk()
    const big = Buffer.alloc(256 * 1024, 7)
    const failed = await db.put('big', big).then(
      () => null,
      (err: unknown) => err,
    )
    t.ok(isStoreIoError(failed), 'a write the disk cannot take fails with an I/O error')
    await rm(filler)
    // LevelDB itself took these into its torn log and dropped them at the next open (acknowledged
    // and lost): here they fail, so nobody is told they were stored.
    const after = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => db.put(`k${i}`, Buffer.from(String(i)))),
    )
    t.same(
      after.filter((r) => r.status === 'fulfilled'),
      [],
      'every write after the failure fails too, room or not',
    )
    t.equal(errors.length, 1, 'the failure is reported once')
    const reopening = db.reopen()
    const during = Array.from({ length: 50 }, (_, i) => {
      const b = db.batch() as { put(k: string, v: Buffer): unknown; write(): Promise<void> }
      b.put(`b:${i}`, Buffer.from(String(i)))
      return b.write()
    })
    await Promise.all([reopening, ...during])
    t.equal((await db.get('before'))?.toString(), 'kept', 'what was written before the failure is there')
    const values: string[] = []
    for await (const v of db.values({ gte: 'b:', lt: 'b;' })) values.push(v.toString())
    t.equal(values.length, 50, 'writes made while it reopened waited and went through')
    await db.put('big', big)
    t.equal((await db.get('big'))?.length, big.length, 'and the write that failed goes through now')
  },
)

t.test('without a guard to reopen it, the next write reopens the store', { skip }, async (t) => {
  const db = await openReopenable(
    () => new Level<string, Buffer>(join(mnt, 'alone'), { valueEncoding: 'buffer' }),
  )
  t.teardown(() => db.close())
  await db.put('before', Buffer.from('kept'))
  await fillDisk()
  await t.rejects(db.put('big', Buffer.alloc(256 * 1024)), { code: 'LEVEL_IO_ERROR' })
  await rm(filler)
  await db.put('after', Buffer.from('stored'))
  t.equal((await db.get('before'))?.toString(), 'kept')
  t.equal((await db.get('after'))?.toString(), 'stored')
})
