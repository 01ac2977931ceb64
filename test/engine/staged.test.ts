// LevelDB's share of the engine's batches, staged and written together (hub/engine/staged.ts):
// a key written twice is written once with its last value, a point read sees what is staged,
// a flush is made once enough operations wait, without waiting for the timer, and otherwise when
// the policy says it is due.
import t from 'tap'
import { type StagedOp, StagedWrites, stagedDue } from '../../hub/engine/staged.ts'
import { waitFor } from '../helpers/wait.ts'

function recorder() {
  const writes: { ops: StagedOp[]; applied: string }[] = []
  return {
    writes,
    write: async (ops: StagedOp[], applied: string) => void writes.push({ ops, applied }),
  }
}

/** Long enough that only a flush or enough operations write. */
const policy = (maxOps: number) => ({ quietMs: 60_000, longestMs: 600_000, manyKeys: 1024, maxOps })

t.test(
  'a key put and deleted before the write is written once, as deleted; reads see the latest',
  async (t) => {
    const r = recorder()
    const s = new StagedWrites(r.write, policy(1000), () => undefined)
    s.add(
      [
        { type: 'put', key: 'open!a', value: '' },
        { type: 'put', key: 'run!a!0', value: '@1.0.5' },
      ],
      '1:100',
    )
    t.equal(s.get('open!a'), '', 'a staged put reads back')
    s.add(
      [
        { type: 'del', key: 'open!a' },
        { type: 'put', key: 'last!x', value: '5' },
      ],
      '1:200',
    )
    t.equal(s.get('open!a'), null, 'a staged delete reads as deleted')
    t.equal(s.get('nowhere'), undefined, 'a key not staged is for LevelDB to answer')
    t.equal(r.writes.length, 0, 'nothing written before the timer or a read')
    await s.flush()
    t.same(r.writes, [
      {
        ops: [
          { type: 'del', key: 'open!a' },
          { type: 'put', key: 'run!a!0', value: '@1.0.5' },
          { type: 'put', key: 'last!x', value: '5' },
        ],
        applied: '1:200',
      },
    ])
    t.notOk(s.pending, 'nothing left')
    await s.flush()
    t.equal(r.writes.length, 1, 'a flush with nothing staged writes nothing')
  },
)

t.test('enough operations waiting are written without the timer', async (t) => {
  const r = recorder()
  const s = new StagedWrites(r.write, policy(4), () => undefined)
  s.add(
    [
      { type: 'put', key: 'a', value: '1' },
      { type: 'put', key: 'b', value: '1' },
    ],
    '1:1',
  )
  s.add(
    [
      { type: 'put', key: 'c', value: '1' },
      { type: 'put', key: 'd', value: '1' },
    ],
    '1:2',
  )
  await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(r.writes.length, 1, 'written once four operations waited')
  t.equal(r.writes[0]!.applied, '1:2')
  await s.discard()
})

t.test('a key put fresh and deleted before the write costs LevelDB nothing', async (t) => {
  const r = recorder()
  const s = new StagedWrites(r.write, policy(1000), () => undefined)
  s.add(
    [
      { type: 'put', key: 'open!a', value: '', fresh: true },
      { type: 'put', key: 'open!b', value: '', fresh: true },
      { type: 'put', key: 'run!a!0', value: '@1.0.5' },
    ],
    '1:100',
  )
  t.equal(s.get('open!a'), '', 'a fresh put reads back')
  s.add([{ type: 'del', key: 'open!a' }], '1:200')
  t.equal(s.get('open!a'), undefined, 'deleted, it is for LevelDB to answer, which never had it')
  await s.flush()
  t.same(r.writes[0]?.ops, [
    { type: 'put', key: 'open!b', value: '' },
    { type: 'put', key: 'run!a!0', value: '@1.0.5' },
  ])
  t.equal(r.writes[0]?.applied, '1:200', 'the delete still counts toward how far the log is applied')

  // Once written, the key is LevelDB's: its delete is written like any other.
  s.add([{ type: 'del', key: 'open!b' }], '1:300')
  await s.flush()
  t.same(r.writes[1]?.ops, [{ type: 'del', key: 'open!b' }])

  // Put fresh, deleted, then put again: the last put is written.
  s.add([{ type: 'put', key: 'open!c', value: '', fresh: true }], '1:400')
  s.add([{ type: 'del', key: 'open!c' }], '1:500')
  s.add([{ type: 'put', key: 'open!c', value: 'again' }], '1:600')
  await s.flush()
  t.same(r.writes[2]?.ops, [{ type: 'put', key: 'open!c', value: 'again' }])
})

t.test(
  'a write is due when quiet, when enough keys wait, or at the latest, whichever comes first',
  async (t) => {
    const p = { quietMs: 30, longestMs: 300, manyKeys: 10, maxOps: 100 }
    const due = (ops: number, keys: number, firstAt: number, lastAt: number) =>
      stagedDue({ ops, keys, firstAt, lastAt }, p)
    t.equal(due(1, 1, 1000, 1000), 1030, 'one operation: quietMs after it')
    t.equal(due(5, 3, 1000, 1020), 1050, 'more came: quietMs after the latest')
    t.equal(due(9, 9, 1000, 1280), 1300, 'they keep coming: longestMs after the first')
    t.equal(due(20, 10, 1000, 1280), 1030, 'enough keys: quietMs after the first, as a busy hub')
    t.equal(due(20, 2, 1000, 1010), 1040, 'operations on few keys are not enough keys')
    t.equal(due(100, 2, 1000, 1010), 1010, 'enough operations: at once')
  },
)

t.test('operations staged are written once they are due, and not before', async (t) => {
  const r = recorder()
  const s = new StagedWrites(
    r.write,
    { quietMs: 20, longestMs: 200, manyKeys: 1024, maxOps: 1000 },
    () => undefined,
  )
  s.add([{ type: 'put', key: 'a', value: '1' }], '1:1')
  t.equal(r.writes.length, 0, 'not written as it is staged')
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.same(r.writes, [{ ops: [{ type: 'put', key: 'a', value: '1' }], applied: '1:1' }], 'written once due')
  t.notOk(s.pending, 'nothing left')
})

t.test('a batch LevelDB has no share of still moves how far it has applied the log', async (t) => {
  const r = recorder()
  const s = new StagedWrites(
    r.write,
    { quietMs: 5, longestMs: 50, manyKeys: 1024, maxOps: 1000 },
    () => undefined,
  )
  s.add([], '1:300')
  t.ok(s.pending, 'something to write: where the log was applied to')
  await waitFor(() => r.writes.length > 0, 'the staged write')
  t.same(r.writes, [{ ops: [], applied: '1:300' }], 'written when due, as any staged batch')
  t.notOk(s.pending, 'and then nothing is left')
})
