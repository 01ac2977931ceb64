// Filesystem triggers on a real temp folder.
import t from 'tap'
import { join } from 'node:path'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { silentLog } from '../../hub/log.ts'
import { createFilesystemSource, wantsChange } from '../../hub/triggers/filesystem.ts'
import { createFirer } from '../../hub/triggers/fire.ts'
import { buildPlan } from '../../hub/triggers/plan.ts'
import { matches } from '../../sops/conditions.ts'
import { tempDir } from '../helpers/tmp.ts'
import { recordingEngine, sop } from './fake-engine.ts'

t.test('change kinds', async (t) => {
  t.ok(wantsChange([], { path: 'a', event: 'deleted', rename: true }))
  t.ok(wantsChange(['created'], { path: 'a', event: 'created', rename: true }))
  t.ok(wantsChange(['renamed'], { path: 'a', event: 'created', rename: true }))
  t.notOk(wantsChange(['renamed'], { path: 'a', event: 'modified', rename: false }))
  t.notOk(wantsChange(['deleted'], { path: 'a', event: 'created', rename: true }))
})

t.test('glob and kinds filter; bursts on one file are debounced into one event', async (t) => {
  const dir = await tempDir(t)
  await mkdir(join(dir, 'inbox', 'sub'), { recursive: true })
  const engine = recordingEngine()
  const src = createFilesystemSource(createFirer(engine, matches, silentLog), silentLog, { debounceMs: 150 })
  t.teardown(() => src.stop())
  await src.setPlan(
    buildPlan([
      sop('csv', [{ type: 'filesystem', path: `${dir}/inbox/**/*.csv`, events: ['created'], condition: '' }]),
      {
        ...sop('gone', [{ type: 'filesystem', path: 'inbox/*.csv', events: ['deleted'], condition: '' }]),
        dir,
      },
      sop('missing', [
        { type: 'filesystem', path: `${dir}/does-not-exist/*.txt`, events: [], condition: '' },
      ]),
    ]),
  )
  const f = join(dir, 'inbox', 'sub', 'a.csv')
  await writeFile(f, '1')
  await writeFile(f, '12')
  await writeFile(f, '123')
  await writeFile(join(dir, 'inbox', 'ignored.txt'), 'x')
  await engine.waitFor(1)
  await writeFile(join(dir, 'inbox', 'b.csv'), 'b')
  await engine.waitFor(2)
  await rm(join(dir, 'inbox', 'b.csv'))
  await engine.waitFor(3)
  await new Promise((r) => setTimeout(r, 400))
  t.same(
    engine.calls.map((c) => [c.sop, c.event.payload]),
    [
      ['csv', { path: f, event: 'created' }],
      ['csv', { path: join(dir, 'inbox', 'b.csv'), event: 'created' }],
      ['gone', { path: join(dir, 'inbox', 'b.csv'), event: 'deleted' }],
    ],
  )
})

t.test(
  'a rename is reported as deleted (old path) and created (new path); `renamed` matches both',
  async (t) => {
    const dir = await tempDir(t)
    const from = join(dir, 'a.txt')
    const to = join(dir, 'b.txt')
    await writeFile(from, 'x')
    const engine = recordingEngine()
    const src = createFilesystemSource(createFirer(engine, matches, silentLog), silentLog, { debounceMs: 50 })
    t.teardown(() => src.stop())
    await src.setPlan(
      buildPlan([
        sop('mv', [{ type: 'filesystem', path: `${dir}/*.txt`, events: ['renamed'], condition: '' }]),
      ]),
    )
    const { rename } = await import('node:fs/promises')
    await rename(from, to)
    await engine.waitFor(2)
    t.same(
      engine.calls
        .map((c) => c.event.payload)
        .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        { path: from, event: 'deleted' },
        { path: to, event: 'created' },
      ],
    )
  },
)

t.test(
  'a folder that is missing or is a file: logged as an error, the other triggers still watch',
  async (t) => {
    const dir = await tempDir(t)
    await mkdir(join(dir, 'ok'))
    await writeFile(join(dir, 'a-file'), 'x')
    const errors: { dir: string; err: string }[] = []
    const log = {
      ...silentLog,
      error: (obj: unknown) => void errors.push(obj as { dir: string; err: string }),
    }
    const engine = recordingEngine()
    const src = createFilesystemSource(createFirer(engine, matches, log), log, { debounceMs: 20 })
    t.teardown(() => src.stop())
    await src.setPlan(
      buildPlan([
        sop('missing', [
          { type: 'filesystem', path: `${dir}/no-such-folder/*.csv`, events: [], condition: '' },
        ]),
        sop('file', [{ type: 'filesystem', path: `${dir}/a-file/*.csv`, events: [], condition: '' }]),
        sop('ok', [{ type: 'filesystem', path: `${dir}/ok/*.csv`, events: [], condition: '' }]),
      ]),
    )
    // Node 22+ on Linux watches a missing folder without a word; the check must not depend on it.
    t.same(errors.map((e) => [e.dir, /ENOENT|ENOTDIR/.exec(e.err)?.[0]]).sort(), [
      [join(dir, 'a-file'), 'ENOTDIR'],
      [join(dir, 'no-such-folder'), 'ENOENT'],
    ])
    await writeFile(join(dir, 'ok', 'x.csv'), '1')
    await engine.waitFor(1)
    t.same(
      engine.calls.map((c) => c.sop),
      ['ok'],
    )
  },
)
