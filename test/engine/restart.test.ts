// Durability (sops/RUNTIME.md, "Restarts"): a real child hub is killed with SIGKILL mid-run; the engine
// restarted on the same LevelDB folder keeps waiting approvals waiting and held triggers held,
// resumes the run that was mid-step, and repeats no effect that was already durable.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { createEngine } from '../../hub/engine/index.ts'
import { tempDir } from '../helpers/tmp.ts'
import { startReadyChild } from '../helpers/ready-child.ts'
import { SOPS, effects, worldTools } from './fixtures/restart-world.ts'

const child = fileURLToPath(new URL('./fixtures/hub-child.ts', import.meta.url))

t.test('kill -9 mid-run, restart, and carry on without repeating an effect', async (t) => {
  const dir = await tempDir(t, 'svc-restart-')
  const proc = await startReadyChild(t, child, dir, 'the child hub to reach its states')
  t.notOk(proc.exited(), 'child is still running when killed')
  const ids = JSON.parse(readFileSync(join(dir, 'ready'), 'utf8')) as {
    mid: string
    gated: string
    held1: string
    held2: string
  }
  t.equal(ids.held2, 'held')
  t.same(
    effects(dir).map((e) => e.key),
    [`${ids.mid}:1:0`, `${ids.mid}:2:0`],
    'step 1 and the first call of step 2 happened',
  )

  await proc.kill()

  const engine = await createEngine({ sops: SOPS, tools: worldTools(dir, 'second'), dbPath: join(dir, 'db') })
  t.teardown(() => engine.close())
  await engine.idle()

  const mid = await engine.getRun(ids.mid)
  t.equal(mid?.state, 'completed', 'the run that was mid-step resumed and completed')
  t.ok(
    mid?.log.some(
      (l) => l.step === 2 && /hub restarted mid-run: resuming step 2 from its first call/.test(l.msg),
    ),
    'the restart is marked on the run',
  )
  t.same(
    mid?.steps['2']?.calls[0],
    { key: `${ids.mid}:2:0`, replayed: true },
    'the durable effect was returned, not repeated',
  )
  const keys = effects(dir).map((e) => e.key)
  t.same(keys, [`${ids.mid}:1:0`, `${ids.mid}:2:0`, `${ids.mid}:3:0`], 'each effect exactly once')

  t.same(
    engine
      .pending()
      .map((p) => p.id)
      .sort(),
    [ids.gated, ids.held1].sort(),
    'waiting approvals are still waiting',
  )
  t.match(
    engine.keptTriggers(),
    [{ sop: 'held', kind: 'held', event: { payload: { n: 4 } } }],
    'the held trigger is still held',
  )

  t.equal((await engine.approve(ids.held1)).ok, true)
  await engine.idle()
  t.equal(engine.keptTriggers().length, 0, 'the held trigger runs once the held SOP has no run')
  t.equal(engine.pending().length, 2, 'gated still waits; the released held run waits at its confirmation')
  t.equal((await engine.approve(ids.gated)).ok, true)
  await engine.idle()
  t.equal((await engine.getRun(ids.gated))?.state, 'completed')
})
