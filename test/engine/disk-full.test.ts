// A full disk (a Pi's SD card fills up) must not lose runs or leak their slots. The engine's
// LevelDB sits on a tmpfs of a few MB that the test fills and frees: a trigger that cannot be
// stored is refused and holds nothing; a run whose checkpoint cannot be written waits, keeps
// its slot, and finishes by itself once there is room again.
import t from 'tap'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Log } from '../../hub/log.ts'
import { fillDisk as fillUp, smallDisk } from '../helpers/small-disk.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEngine } from './engine-helpers.ts'
import { call, event, incompressible, memoryTools, sop, step } from './helpers.ts'

const { path: mnt, error: mountError } = await smallDisk(t, 8, 'svc-small-disk-')

const filler = join(mnt, 'filler')
const fillDisk = () => fillUp(filler)
const freeDisk = () => rm(filler, { force: true })

function recordingLog(): Log & { msgs: string[] } {
  const msgs: string[] = []
  const at = (o: object | string, msg?: string) => void msgs.push(typeof o === 'string' ? o : (msg ?? ''))
  return { msgs, info: at, warn: at, error: at }
}

t.test(
  'disk full: refused triggers hold no slot; a run waits for room and then finishes',
  { skip: mountError ? `needs a small tmpfs to fill (mount as root on Linux): ${mountError}` : false },
  async (t) => {
    const log = recordingLog()
    const tools = memoryTools()
    // Step 1's output is large, so its checkpoint needs fresh pages: a few hundred bytes could
    // still fit in the last page of LevelDB's log even on a full disk.
    const s = sop({
      maxConcurrent: 1,
      steps: [
        step(1, { calls: [call('block', { pad: incompressible(64 * 1024) })] }),
        step(2, { calls: [call('echo', { done: true })], terminal: true }),
      ],
    })
    const { engine } = await startEngine(t, [s], { dbPath: join(mnt, 'engine'), tools, log })

    await fillDisk()
    await t.rejects(
      engine.trigger('test-sop', event({ n: 1 })),
      { code: 'LEVEL_IO_ERROR' },
      'a trigger the store cannot take is refused',
    )
    await freeDisk()
    const first = await engine.trigger('test-sop', event({ n: 2 }))
    t.equal(first.outcome, 'started', 'the refused trigger left no run behind holding the only slot')
    await waitFor(() => tools.blockedCount() === 1, 'the run to reach its blocking step')

    await fillDisk()
    tools.release()
    await waitFor(
      () => log.msgs.some((m) => m.startsWith('cannot write the run checkpoint')),
      'the checkpoint write to fail',
    )
    const waiting = await engine.getRun(first.runId!)
    t.equal(waiting?.state, 'running', 'the run waits, still running, holding its slot')
    t.equal(
      tools.calls.filter((c) => c.tool === 'echo').length,
      0,
      'and does not go on to step 2 before step 1 is recorded',
    )
    const second = await engine
      .trigger('test-sop', event({ n: 3 }))
      .catch((err: { code?: string }) => err.code)
    t.not((second as { outcome?: string }).outcome, 'started', 'no second run starts beside it')

    await freeDisk()
    const done = await waitFor(async () => {
      const r = await engine.getRun(first.runId!)
      return r?.state === 'completed' ? r : undefined
    }, 'the run to finish once there is room')
    t.same(done.steps[2]?.output, { done: true }, 'step 2 ran after the checkpoint went through')
    t.ok(log.msgs.includes('run checkpoint written; the run goes on'))
    await engine.idle()
    const after = await engine.trigger('test-sop', event({ n: 4 }))
    t.equal(after.outcome, 'started', 'the slot is free again')
    await waitFor(() => tools.blockedCount() === 1, 'the new run to start')
    tools.release()
    await waitFor(
      async () => (await engine.getRun(after.runId!))?.state === 'completed',
      'the new run to finish',
    )
  },
)
