// Memory given back once a busy spell ends (hub/memory/give-back.ts): the rule, the timer driving
// it with the CPU figures injected, and V8's full collection as the hub takes it.
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { fullCollection, startGiveBack } from '../../hub/memory/give-back.ts'
import { afterWindow, BUSY_SHARE, NOTHING_TO_GIVE_BACK } from '../../hub/memory/spells.ts'
import { silentLog } from '../../hub/log.ts'
import { waitFor } from '../helpers/wait.ts'

t.test('one collection per busy spell, once it has been quiet long enough', async (t) => {
  let s = NOTHING_TO_GIVE_BACK
  const step = (share: number) => {
    const r = afterWindow(s, share, 3)
    s = r.state
    return r.collect
  }
  t.same(
    [step(0), step(0), step(0), step(0)],
    [false, false, false, false],
    'quiet from the start: nothing to give back',
  )
  t.equal(step(BUSY_SHARE), false, 'busy: not collected while busy')
  t.equal(step(BUSY_SHARE * 9), false)
  t.same([step(0), step(BUSY_SHARE / 2)], [false, false], 'quiet, but not yet for long')
  t.equal(step(BUSY_SHARE), false, "busy again (a burst's staged write): the quiet starts over")
  t.same([step(0), step(0)], [false, false])
  t.equal(step(BUSY_SHARE / 2), true, 'the third quiet window in a row collects')
  t.same([step(0), step(0), step(0), step(0)], [false, false, false, false], 'once a spell')
  t.equal(step(BUSY_SHARE), false)
  t.same([step(0), step(0), step(0)], [false, false, true], 'a second spell, a second collection')
})

t.test('the timer collects after a busy spell, once, and stops', async (t) => {
  let busy = false
  let cpu = 0
  let reads = 0
  let collected = 0
  const giveBack = startGiveBack({
    log: silentLog,
    windowMs: 5,
    quietMs: 15,
    // A busy window: far more CPU than the window lasted; an idle one: none.
    cpuMicros: () => {
      reads++
      if (busy) cpu += 1e9
      return cpu
    },
    collect: () => collected++,
    heapBytes: () => ({ total: 0, used: 0 }),
  })
  t.teardown(() => giveBack.stop())
  await waitFor(() => reads >= 6, 'idle windows')
  t.equal(collected, 0, 'idle from the start: no collection')
  busy = true
  const at = reads
  await waitFor(() => reads >= at + 4, 'busy windows')
  t.equal(collected, 0, 'none while busy')
  busy = false
  await waitFor(() => collected === 1, 'the collection after the spell')
  const after = reads
  await waitFor(() => reads >= after + 10, 'more idle windows')
  t.equal(collected, 1, 'one per spell')
  t.equal(giveBack.collections, 1)
  giveBack.stop()
  const stoppedAt = reads
  await new Promise((r) => setTimeout(r, 50))
  t.equal(reads, stoppedAt, 'stopped: no more windows')
})

t.test("V8's full collection frees what nothing holds, and is not left exposed", async (t) => {
  const collect = fullCollection()
  if (!collect) return t.fail('no full collection available in this node')
  collect()
  const base = process.memoryUsage().heapUsed
  let garbage: object[] | null = Array.from({ length: 400_000 }, (_, i) => ({ i, s: `run ${i}` }))
  const held = process.memoryUsage().heapUsed - base
  t.ok(held > 10 * 1048576 && garbage.length > 0, 'the garbage took room')
  garbage = null
  collect()
  const left = process.memoryUsage().heapUsed - base
  t.ok(
    left < held / 4,
    `collected: ${Math.round(held / 1048576)} MB held, ${Math.round(left / 1048576)} MB left`,
  )
  t.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'not on this context')
  t.equal(runInNewContext('typeof gc'), 'undefined', 'nor on a context made later')
})
