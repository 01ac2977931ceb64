// The run index's positions and filters (pure): the finished runs, newest first, by any of
// (all), (sop), (state), (sop+state) within a time range, as keyset pages. A run's position is
// `<t>!<id>`: createdAt in base 36, fixed width, so byte order is time order, then its id. The
// index itself is finished-index.ts: a sorted file per sealed segment of the history log; the
// runs not finished (pending, running, at a gate) come from the engine's memory, or from their
// records when the store is read with no engine, and a finished run's state never changes.
import { RunFilterError, type RunFilter } from '../../sops/hub-engine.ts'
import { RUN_STATES, type RunState, isFinished } from '../../sops/run/states.ts'

/** Where the index was kept in LevelDB before it moved to files: cleared when a store is re-indexed. */
export const INDEX = 'ix!'
/**
 * Bumped when the index changes: a store without the current marker is re-indexed on open.
 * '1': LevelDB keys under `ix!`; '2': finished-index.ts's files.
 */
export const INDEX_VERSION = '2'
export const INDEX_MARKER = 'meta!runindex'

export const T_WIDTH = 10
const SEP = '\u0000'

const t36 = (ms: number) => Math.max(0, Math.floor(ms)).toString(36).padStart(T_WIDTH, '0')

/** A run's place in every ordering: `<t>!<id>`, which is also what a cursor carries. */
export const position = (r: { createdAt: number; id: string }) => `${t36(r.createdAt)}!${r.id}`

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/**
 * A run's position from its id alone, when the id is an RFC 9562 UUIDv7 (its first 48 bits, the
 * creation time in ms), else null. The engine makes a run's id from its creation time
 * (run-driver.ts), so for its runs this is `position(run)`; a finished run the run index alone
 * locates is found by it (finished-index.ts `find`).
 */
export function idPosition(id: string): string | null {
  if (!UUID_V7.test(id)) return null
  return position({ createdAt: Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16), id })
}

/** Positions in ascending order (a sort comparator; swap the arguments for newest first). */
export const byPosition = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Whether the index holds runs in this state (finished ones); the others come from the live runs. */
export const indexedState = (state: RunState): boolean => isFinished(state)

// A cursor is the last position of the page before, as `<t>.<id>` (dot: readable in a URL).
const CURSOR = /^([0-9a-z]{10})\.([A-Za-z0-9_-]{1,128})$/

/** The cursor for a page that ended at `pos` (a `position`). */
export function cursorAt(pos: string): string {
  return `${pos.slice(0, T_WIDTH)}.${pos.slice(T_WIDTH + 1)}`
}

/** The position a cursor stands for, or an error saying what is wrong with it. */
export function decodeCursor(cursor: string): string {
  const m = CURSOR.exec(cursor)
  if (!m) throw new RunFilterError(`cursor "${cursor.slice(0, 80)}" is not one this hub gave out`)
  return `${m[1]}!${m[2]}`
}

/** The filter, checked: every field of the wrong kind is an error naming it. */
export function checkFilter(f: RunFilter): {
  limit: number
  /** Positions: a page holds runs with lower <= position < upper. */
  lower: string
  upper: string
} {
  if (f.sop !== undefined && (typeof f.sop !== 'string' || f.sop === '' || f.sop.includes(SEP)))
    throw new RunFilterError('sop must be a SOP name')
  if (f.state !== undefined && !(RUN_STATES as readonly string[]).includes(f.state))
    throw new RunFilterError(`state "${String(f.state)}" is not one of ${RUN_STATES.join(', ')}`)
  const limit = f.limit ?? 100
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RunFilterError('limit must be a whole number ≥ 1')
  for (const k of ['since', 'until'] as const) {
    const v = f[k]
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0))
      throw new RunFilterError(`${k} must be a time in ms since the epoch`)
  }
  let upper = f.until !== undefined ? t36(Math.ceil(f.until)) : '\u007f'
  if (f.cursor !== undefined) {
    if (typeof f.cursor !== 'string') throw new RunFilterError('cursor must be a string')
    const c = decodeCursor(f.cursor)
    if (c < upper) upper = c
  }
  const lower = f.since !== undefined ? t36(Math.ceil(f.since)) : ''
  return { limit, lower, upper }
}
