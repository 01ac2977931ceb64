// The run index's keys (pure): four orderings of the runs, each keyed by creation time then id,
// so a reverse LevelDB iteration from a keyset position yields a newest-first page of any of
// (all), (sop), (state), (sop+state) within a time range without reading the runs outside it.
//
//   ix!a!<t>!<id>                   every run, from its first write
//   ix!s!<sop>\0<t>!<id>            by SOP, from its first write
//   ix!t!<state>\0<t>!<id>          by state: finished runs, written with the finish
//   ix!q!<sop>\0<state>\0<t>!<id>   by SOP and state: finished runs, likewise
//
// A finished run's state never changes, so no key ever moves. The runs not finished (pending,
// running, at a gate: the few with an `open!` marker) are filtered by state from the engine's
// memory, or from their records when the store is read with no engine; a run's state changes
// then cost no index write (bench: they are most of a run's writes).
//
// <t> is createdAt in base 36, fixed width, so byte order is time order. Values are empty: a
// page's summaries come from the finished runs' `fin!` records (or memory, for live runs).
import { RunFilterError, type RunFilter } from '../../sops/hub-engine.ts'
import { RUN_STATES, type RunState, isFinished } from '../../sops/run/states.ts'

export const INDEX = 'ix!'
/** Bumped when the key layout changes: a store without the current marker is re-indexed on open. */
export const INDEX_VERSION = '1'
export const INDEX_MARKER = 'meta!runindex'

const T_WIDTH = 10
const SEP = '\u0000'

export interface Indexed {
  id: string
  sop: string
  state: RunState
  createdAt: number
}

const t36 = (ms: number) => Math.max(0, Math.floor(ms)).toString(36).padStart(T_WIDTH, '0')

/** A run's place in every ordering: `<t>!<id>`, which is also what a cursor carries. */
export const position = (r: { createdAt: number; id: string }) => `${t36(r.createdAt)}!${r.id}`

const prefixes = (sop: string, state: RunState) => ({
  all: `${INDEX}a!`,
  sop: `${INDEX}s!${sop}${SEP}`,
  state: `${INDEX}t!${state}${SEP}`,
  both: `${INDEX}q!${sop}${SEP}${state}${SEP}`,
})

/** The keys a run has in `state`: two while it is not finished, four once it is. */
export function indexKeys(r: Indexed): string[] {
  const p = prefixes(r.sop, r.state)
  const pos = position(r)
  return isFinished(r.state)
    ? [p.all + pos, p.sop + pos, p.state + pos, p.both + pos]
    : [p.all + pos, p.sop + pos]
}

/** The keys a run gains when it finishes: by its final state, and by SOP and that state. */
export function finishedKeys(r: Indexed): string[] {
  const p = prefixes(r.sop, r.state)
  const pos = position(r)
  return [p.state + pos, p.both + pos]
}

/** Whether the index holds runs in this state (finished ones); the others come from the live runs. */
export const indexedState = (state: RunState): boolean => isFinished(state)

/** The id at the end of an index key. */
export function idOf(key: string): string {
  return key.slice(key.lastIndexOf('!') + 1)
}

/** The ordering that serves `filter`: its key prefix. */
export function prefixFor(filter: Pick<RunFilter, 'sop' | 'state'>): string {
  if (filter.sop !== undefined && filter.state !== undefined)
    return `${INDEX}q!${filter.sop}${SEP}${filter.state}${SEP}`
  if (filter.sop !== undefined) return `${INDEX}s!${filter.sop}${SEP}`
  if (filter.state !== undefined) return `${INDEX}t!${filter.state}${SEP}`
  return `${INDEX}a!`
}

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
