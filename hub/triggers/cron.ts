// Cron triggers: five-field expressions scheduled with node-schedule in the configured
// timezone. Missed runs (hub off, or asleep, at a scheduled time) follow one rule: on start, a
// schedule whose latest due time since it last fired was missed gets ONE catch-up run, sent
// with `catchUp: true` and the missed time, however many times it was missed. A schedule seen
// for the first time is not caught up. The last fire time of each (SOP, expression) is kept in
// a small JSON file, written atomically; a damaged one is set aside and the hub goes on without
// catch-up memory (hub/files/README.md: Small files).
import schedule from 'node-schedule'
import { CronExpressionParser } from 'cron-parser'
import { fail } from '../../errors/codes.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { type Parsed, parseJson, readOrSetAside } from '../files/damaged-file.ts'
import type { Log } from '../log.ts'
import type { Firer } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { errorText } from '../../errors/text.ts'

export interface CronOptions {
  timezone: string
  /** Give a missed schedule one catch-up run at start (default true). */
  catchUp: boolean
  /** JSON file holding the last fire time per schedule; undefined = no catch-up memory. */
  statePath?: string
  now?: () => number
}

type CronState = Record<string, number>

export function cronKey(sop: string, expression: string): string {
  return `${sop}\u0000${expression.trim()}`
}

/** The latest scheduled time in (after, now], or null. Pure. */
export function missedSince(expression: string, timezone: string, after: number, now: number): number | null {
  const it = CronExpressionParser.parse(expression, { currentDate: new Date(now), tz: timezone })
  const prev = it.prev().getTime()
  return prev > after ? prev : null
}

export interface CronSource {
  setPlan(plan: TriggerPlan): Promise<void>
  stop(): Promise<void>
  /** Fire one schedule now, as node-schedule would (tests). */
  fireNow(sop: string, expression: string): Promise<void>
  /** The next time each schedule fires (ISO), for logs and status. */
  next(): { sop: string; expression: string; next: string | null }[]
}

/** The state file's schedules; a value that is not a time is dropped, a file that is not an object is damaged. */
function parseCronState(text: string): Parsed<CronState> {
  const r = parseJson(text)
  if (!r.ok) return r
  const parsed = r.value
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    return fail('IO_FAILED', 'not a JSON object')
  const out: CronState = {}
  for (const [k, v] of Object.entries(parsed)) if (typeof v === 'number' && Number.isFinite(v)) out[k] = v
  return { ok: true, value: out }
}

async function readState(path: string | undefined, log: Log): Promise<CronState> {
  if (!path) return {}
  // Without it every schedule is new: nothing missed while the hub was off is caught up, and
  // each schedule fires at its next time as usual.
  const instead =
    'cron starts without catch-up memory: schedules missed while the hub was off are not caught up'
  return (await readOrSetAside(path, parseCronState, { log, instead })) ?? {}
}

export async function createCronSource(firer: Firer, log: Log, opts: CronOptions): Promise<CronSource> {
  const now = opts.now ?? Date.now
  const state = await readState(opts.statePath, log)
  const jobs = new Map<string, schedule.Job>()
  let writing: Promise<void> = Promise.resolve()

  const save = (): Promise<void> => {
    const path = opts.statePath
    if (!path) return Promise.resolve()
    // Serialised, each write atomic: a crash leaves the last state saved whole.
    writing = writing
      .then(() => writeFileAtomic(path, JSON.stringify(state)))
      .catch((err: unknown) => log.error({ path, err: errorText(err) }, 'could not save cron state'))
    return writing
  }

  const run = async (sop: string, expression: string, scheduled: number, catchUp: boolean): Promise<void> => {
    state[cronKey(sop, expression)] = Math.max(scheduled, now())
    await save()
    await firer.fire(sop, {
      type: 'cron',
      source: catchUp ? `cron ${expression} (catch-up)` : `cron ${expression}`,
      payload: { expression, scheduled: new Date(scheduled).toISOString(), catchUp },
      at: now(),
    })
  }

  const setPlan = async (plan: TriggerPlan): Promise<void> => {
    const wanted = new Map(plan.cron.map((c) => [cronKey(c.sop, c.trigger.expression), c]))
    for (const [key, job] of jobs) {
      if (!wanted.has(key)) {
        job.cancel()
        jobs.delete(key)
      }
    }
    const t = now()
    for (const [key, c] of wanted) {
      if (jobs.has(key)) continue
      const expression = c.trigger.expression.trim()
      const job = schedule.scheduleJob({ rule: expression, tz: opts.timezone }, (fireDate: Date) => {
        run(c.sop, expression, fireDate.getTime(), false).catch((err: unknown) =>
          log.error({ sop: c.sop, err: errorText(err) }, 'cron run failed'),
        )
      })
      if (!job) {
        log.error(
          { sop: c.sop, expression, file: c.trigger.origin.file, line: c.trigger.origin.line },
          'cron schedule has no future time; skipped',
        )
        continue
      }
      jobs.set(key, job)
      log.info(
        { sop: c.sop, expression, timezone: opts.timezone, next: job.nextInvocation()?.toISOString() },
        'cron scheduled',
      )
      const last = state[key]
      if (last === undefined) {
        // First sight of this schedule: remember now, so only later misses are caught up.
        state[key] = t
        await save()
      } else if (opts.catchUp) {
        const missed = missedSince(expression, opts.timezone, last, t)
        if (missed !== null) {
          log.info(
            { sop: c.sop, expression, missed: new Date(missed).toISOString() },
            'cron schedule missed while the hub was off: one catch-up run',
          )
          await run(c.sop, expression, missed, true)
        }
      }
    }
  }

  return {
    setPlan,
    async stop() {
      for (const job of jobs.values()) job.cancel()
      jobs.clear()
      await writing
    },
    next() {
      return [...jobs.entries()].map(([key, job]) => {
        const [sop = '', expression = ''] = key.split('\u0000')
        const at = job.nextInvocation()
        return { sop, expression, next: at ? new Date(at.getTime()).toISOString() : null }
      })
    },
    async fireNow(sop, expression) {
      await run(sop, expression.trim(), now(), false)
    },
  }
}
