// A run's record reaching the store: every part that moves a run (the driver, approvals, the
// release of a kept trigger) writes it through here.
import { errorText } from '../../errors/text.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { isStoreIoError } from '../disk/errors.ts'
import type { EngineContext } from './context.ts'
import type { BatchOp } from './group-commit.ts'

/** The run's record as it is now, and `extra` in the same batch; watchers hear of it once stored. */
export async function persist(ctx: EngineContext, run: RunRecord, extra: BatchOp[] = []): Promise<void> {
  run.updatedAt = ctx.now()
  await durable(ctx, run.id, [...ctx.store.runOps(run), ...extra])
  ctx.runChanged(run)
}

/**
 * A running run's checkpoint waits out a disk that cannot take it (full, or failing) rather
 * than abandoning the run: what its step did has happened, so its record must land, and the
 * run keeps its slot meanwhile. It resumes by itself once the write goes through. Admission
 * writes are not retried: a trigger the store cannot take is refused, and its source told so.
 */
export async function durable(
  ctx: EngineContext,
  runId: string,
  ops: BatchOp[],
  opts: { defer?: boolean } = {},
): Promise<void> {
  let wait = 100
  for (let tries = 0; ; tries++) {
    try {
      await ctx.store.write(ops, opts)
      // With a disk guard, the guard says once for every run that the store failed and is back.
      if (tries > 0)
        ctx.log[ctx.disk ? 'debug' : 'info']?.(
          { run: runId, tries: tries + 1 },
          'run checkpoint written; the run goes on',
        )
      return
    } catch (err) {
      if (ctx.closed || !isStoreIoError(err)) throw err
      if (tries === 0)
        ctx.log[ctx.disk ? 'debug' : 'error']?.(
          { run: runId, err: errorText(err) },
          'cannot write the run checkpoint (disk full?); retrying until it can',
        )
      await new Promise((r) => setTimeout(r, wait).unref())
      wait = Math.min(wait * 2, 5000)
    }
  }
}
