// The flash history (a JSON-lines file under the data dir) and the image files a flash keeps:
// real files in a temp folder. One record per flash (its last line wins), per board, newest
// first; a line torn by a crash costs only itself; the file stays bounded; old images go.
import { appendFile, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createFlashHistory, type FlashRecord, newFlashId } from '../../hub/flash/history.ts'
import { createImageStore, flashStamp } from '../../hub/flash/images.ts'
import { tempDir } from '../helpers/tmp.ts'

let clock = Date.parse('2026-11-27T10:00:00Z')

function rec(board: string, over: Partial<FlashRecord> = {}): FlashRecord {
  clock += 1000
  return {
    id: newFlashId(clock),
    board,
    who: 'alice (local API)',
    via: 'api',
    sha256: 'ab'.repeat(32),
    size: 1234,
    from: 'svc-companion/0.1.0',
    to: 'svc-companion/0.2.0',
    proto: 1,
    downgrade: false,
    outcome: 'started',
    started: new Date(clock).toISOString(),
    finished: null,
    error: null,
    previous: null,
    ...over,
  }
}

t.test('records per board, newest first; the last line of a flash wins', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'firmware', 'history.jsonl')
  const h = createFlashHistory({ file })
  t.same(await h.list('vend1'), [], 'no file yet: no flashes')
  const a = rec('vend1')
  const b = rec('vend2')
  const c = rec('vend1')
  for (const r of [a, b, c]) await h.append(r)
  await h.append({ ...a, outcome: 'flashed', finished: new Date(clock).toISOString(), previous: '/p.hex' })
  await h.append({ ...c, outcome: 'rolled back', error: 'no hello from svc-companion/0.2.0 within 15 s' })
  const v1 = await h.list('vend1')
  t.same(
    v1.map((r) => [r.id, r.outcome]),
    [
      [c.id, 'rolled back'],
      [a.id, 'flashed'],
    ],
  )
  t.equal(v1[1]!.previous, '/p.hex')
  t.same(
    (await h.list('vend2')).map((r) => r.outcome),
    ['started'],
  )
  t.equal((await h.list(null)).length, 3, 'every board')
  t.equal((await h.list('vend1', 1)).length, 1, 'limit')
  const lines = (await readFile(file, 'utf8')).trim().split('\n')
  t.equal(lines.length, 5, 'append-only: every write is a line')
  // Another process reading the same file (the CLI with no hub) sees the same thing.
  t.same(await createFlashHistory({ file }).list('vend1'), v1)
})

t.test('a line torn by a crash is skipped and does not swallow the next record', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'history.jsonl')
  const a = rec('vend1')
  await writeFile(file, `${JSON.stringify(a)}\n{"id":"torn","board":"vend1","sta`)
  const h = createFlashHistory({ file })
  const b = rec('vend1', { outcome: 'flashed' })
  await h.append(b)
  t.same(
    (await h.list('vend1')).map((r) => r.id),
    [b.id, a.id],
  )
  await appendFile(file, 'not json\n[1,2]\n{"id":"x","board":"vend1","started":"t","outcome":"exploded"}\n')
  t.same(
    (await h.list('vend1')).map((r) => r.id),
    [b.id, a.id],
    'lines that are not records are ignored',
  )
})

t.test('bounded: past twice max lines the file keeps the newest max flashes', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'history.jsonl')
  const h = createFlashHistory({ file, max: 5 })
  const all: FlashRecord[] = []
  for (let i = 0; i < 14; i++) {
    const r = rec(i % 2 ? 'vend1' : 'vend2')
    all.push(r)
    await h.append(r)
  }
  const lines = (await readFile(file, 'utf8')).trim().split('\n')
  t.ok(lines.length <= 10, `${lines.length} lines on disk`)
  const kept = (await h.list(null, 100)).map((r) => r.id)
  t.same(
    kept.slice(0, 5),
    all
      .slice(-5)
      .reverse()
      .map((r) => r.id),
    'the newest five are all there',
  )
  t.notOk(kept.includes(all[0]!.id), 'the oldest is gone')
})

t.test('image files: names by time, the newest `keep` flashes per board stay', async (t) => {
  const dir = await tempDir(t)
  const store = createImageStore({ dir, keep: 2 })
  const made: string[] = []
  for (let i = 0; i < 4; i++) {
    const f = await store.prepare('vend1', Date.parse('2026-11-27T10:00:00Z') + i * 60_000)
    await store.write(f.image, `:00000001FF\n`)
    await store.write(f.previous, `:00000001FF\n`)
    made.push(f.stamp)
  }
  await writeFile(join(dir, 'vend1', 'notes.txt'), 'mine')
  await store.prune('vend1')
  t.same((await readdir(join(dir, 'vend1'))).sort(), [
    `${made[2]}-image.hex`,
    `${made[2]}-previous.hex`,
    `${made[3]}-image.hex`,
    `${made[3]}-previous.hex`,
    'notes.txt',
  ])
  t.equal(flashStamp(Date.parse('2026-11-27T10:15:30.123Z')), '20261127T101530123Z')
  await store.prune('never-flashed')
  t.pass('a board with no folder prunes nothing')
})
