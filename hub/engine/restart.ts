// Taking up what the store holds: at a start (`recover`), and when the store is opened again
// after a failed write once the disk has room (`reopen`, the engine's reopenStore).
import type { RunRecord } from '../../sops/run/record.ts'
import { isParked } from '../../sops/run/states.ts'
import type { Admission } from './admission.ts'
import type { EngineContext } from './context.ts'
import type { OnceOnly } from './once-only.ts'
import { keptTriggers } from './queries.ts'
import type { RunDriver } from './run-driver.ts'

export interface RestartParts {
  driver: RunDriver
  admission: Admission
  once: OnceOnly
}

/**
 * After a restart (sops/RUNTIME.md, "Restarts"): parked runs stay parked, kept triggers stay kept,
 * a run that was pending starts again, and a run that was mid-step re-runs that step from its
 * first call with the same idempotency keys, so a tool whose effect is already durable
 * (chain_attest) returns its stored result instead of acting twice. Completed steps never re-run.
 */
export async function recover(ctx: EngineContext, parts: RestartParts): Promise<void> {
  const store = ctx.store
  ctx.lastFinished = await store.lastFinished()
  parts.once.load(await store.marks())
  for (const r of await store.unfinished()) ctx.live.add(r)
  for (const k of await store.kept()) ctx.keptFor(k.sop).push(k)
  for (const r of ctx.live.values()) resume(ctx, parts.driver, r)
  for (const name of ctx.kept.keys()) parts.admission.release(name)
  parts.once.startPruning()
}

/**
 * A run read back from the store goes on where its record says. After a restart its current
 * step may have been under way (a repeat); a run whose admission was reported failed never ran.
 */
function resume(ctx: EngineContext, driver: RunDriver, r: RunRecord, restarted = true): void {
  // The stored record of the current step may be from an earlier visit (entering a step is
  // not written on its own): re-enter it, counting the visit, keeping its retry count.
  const cur = r.current !== null ? r.steps[r.current] : undefined
  if (
    r.current !== null &&
    (r.state === 'running' || r.state === 'pending' || isParked(r.state)) &&
    cur?.status !== 'running'
  ) {
    r.steps[r.current] = {
      number: r.current,
      status: 'running',
      visits: (cur?.visits ?? 0) + 1,
      attempts: 0,
      calls: [],
    }
  }
  // A pending run's first step may have been called too: entering it is not written on its
  // own, so a kill between the call and its result leaves the run pending.
  if (restarted && (r.state === 'running' || r.state === 'pending') && r.current !== null) {
    ctx.repeating.add(r.id)
    ctx.note(
      r,
      r.current,
      'warn',
      r.state === 'running'
        ? `hub restarted mid-run: resuming step ${r.current} from its first call`
        : `hub restarted mid-run: step ${r.current} starts again (it may have been called before the restart)`,
    )
  }
  if (r.state === 'running' || r.state === 'pending') driver.spawn(r)
}

/**
 * Opens the store again after a write failed (the disk guard calls it once there is room), and
 * takes up what a failed write may have left on disk after all, as a restart would: a batch
 * reported failed can still be whole in LevelDB's log. Runs, kept triggers and once-only marks
 * the engine does not hold are read back; the ones it holds are ahead of the store and kept.
 */
export async function reopen(ctx: EngineContext, parts: RestartParts): Promise<void> {
  const store = ctx.store
  await store.reopen()
  if (ctx.closed) return
  const known = new Set([...ctx.live.values()].map((r) => r.id))
  for (const id of ctx.finishing.keys()) known.add(id)
  for (const [key, stored] of await store.marks()) parts.once.merge(key, stored)
  for (const [sop, at] of await store.lastFinished())
    if (at > (ctx.lastFinished.get(sop) ?? 0)) ctx.lastFinished.set(sop, at)
  const keptKeys = new Set([...keptTriggers(ctx).map((k) => k.key), ...parts.admission.unkeeping])
  for (const k of await store.kept()) if (!keptKeys.has(k.key)) ctx.keptFor(k.sop).push(k)
  for (const r of await store.unfinished(known)) {
    ctx.live.add(r)
    ctx.note(r, 0, 'info', 'admitted as the store failed; read back once it opened again')
    resume(ctx, parts.driver, r, false)
  }
  for (const name of ctx.kept.keys()) parts.admission.release(name)
}
