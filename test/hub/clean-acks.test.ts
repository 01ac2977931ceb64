// hub/broker/clean-acks.ts on the embedded broker's real persistence (aedes-persistence-level on
// the batched LevelDB, in a temp folder): a persistent session's PUBACK still clears its stored
// delivery; a clean session's PUBACK is answered without a LevelDB read.
import t from 'tap'
import { join } from 'node:path'
import { Level } from 'level'
// @ts-expect-error aedes-persistence-level ships no types: (db: Level) => persistence
import aedesPersistenceLevel from 'aedes-persistence-level'
import { type LevelLike, batchedDb } from '../../hub/broker/batched-db.ts'
import { cleanSessionAcks } from '../../hub/broker/clean-acks.ts'
import { tempDir } from '../helpers/tmp.ts'

interface Persistence {
  outgoingEnqueue(sub: { clientId: string }, packet: object): Promise<void>
  outgoingUpdate(client: object, packet: object): Promise<void>
  outgoingClearMessageId(
    client: object,
    packet: { messageId: number },
  ): Promise<{ payload?: unknown } | undefined>
}

t.test('a persistent session clears what it stored; a clean one is not looked up', async (t) => {
  const level = new Level<string, Buffer>(join(await tempDir(t), 'db'), { valueEncoding: 'buffer' })
  await level.open()
  const db = batchedDb(level as unknown as LevelLike)
  t.teardown(() => db.close())
  const p = cleanSessionAcks(aedesPersistenceLevel(db) as Persistence)

  const kept = { id: 'kept', clean: false }
  const packet = {
    cmd: 'publish',
    topic: 'out/1',
    payload: Buffer.from('x'),
    qos: 1,
    retain: false,
    dup: false,
    brokerId: 'b',
    brokerCounter: 1,
  }
  await p.outgoingEnqueue({ clientId: kept.id }, packet)
  await p.outgoingUpdate(kept, { ...packet, messageId: 7 })
  const cleared = await p.outgoingClearMessageId(kept, { messageId: 7 })
  t.equal(String(cleared?.payload), 'x', 'the stored delivery is cleared and returned')
  t.equal(await p.outgoingClearMessageId(kept, { messageId: 7 }), undefined, 'and is gone')

  const reads = () => db.stats.hits + db.stats.misses
  const before = reads()
  for (let id = 1; id <= 50; id++)
    t.equal(await p.outgoingClearMessageId({ id: 'fresh', clean: true }, { messageId: id }), undefined)
  t.equal(reads(), before, 'fifty clean-session PUBACKs: no read at all')
  await p.outgoingClearMessageId({ id: 'fresh', clean: false }, { messageId: 1 })
  t.equal(reads(), before + 1, 'the same id from a persistent session is looked up')
})
