// The disk guard's state as the hub shows it: the `disk` object of `svc/hub/state`,
// `GET /hub/status` and the console, the line `svc hub status` prints, and the words of the log
// lines the guard writes. Pure.
import { bytesText } from './reserve.ts'
import { type Cause, type DiskState, type Reading, worstReading } from './state.ts'

export interface DiskView {
  state: 'ok' | 'refusing'
  /** Free bytes on the watched path closest to its reserve. */
  free_bytes: number | null
  reserve_bytes: number | null
  path: string | null
  /** Since when the hub is in this state (ISO time). */
  since: string
  /** Why it refuses (absent while ok). */
  reason?: string
  /** Stores whose writes failed, waiting to be reopened (absent when none). */
  stores_failed?: string[]
  /** Events the embedded broker holds unacknowledged until there is room (absent elsewhere). */
  held_events?: number
}

export function causeText(c: Cause): string {
  return c.kind === 'reserve'
    ? `free space on ${c.path} is below the reserve`
    : `the ${c.store} store could not write (${c.error})`
}

export function diskView(s: DiskState): DiskView {
  const r = worstReading(s.readings)
  return {
    state: s.mode,
    free_bytes: r?.free ?? null,
    reserve_bytes: r?.reserve ?? null,
    path: r?.path ?? null,
    since: new Date(s.since).toISOString(),
    ...(s.cause ? { reason: causeText(s.cause) } : {}),
    ...(s.failed.length > 0 ? { stores_failed: s.failed.map((f) => f.store) } : {}),
  }
}

const space = (r: Reading | null): string =>
  r ? `${bytesText(r.free)} free on ${r.path}, reserve ${bytesText(r.reserve)}` : 'no reading yet'

/** `svc hub status`'s disk line. */
export function diskLine(v: DiskView): string {
  const where =
    v.free_bytes !== null && v.reserve_bytes !== null
      ? `${bytesText(v.free_bytes)} free on ${v.path}, reserve ${bytesText(v.reserve_bytes)}`
      : 'no reading yet'
  if (v.state === 'ok') return `ok: ${where}`
  return `REFUSING new work since ${v.since}: ${v.reason ?? 'the disk'} (${where})${
    v.stores_failed ? `; waiting to reopen ${v.stores_failed.join(', ')}` : ''
  }${v.held_events ? `; ${v.held_events} events held unacknowledged` : ''}`
}

/** The one warning when the hub starts refusing. */
export function refuseMessage(cause: Cause, r: Reading | null, again: boolean): string {
  return (
    `disk: refusing new work${again ? ' again' : ''}: ${causeText(cause)} (${space(r)}); ` +
    'events are not acknowledged until there is room (approvals, status and reads go on): hub/README.md, "A full disk"'
  )
}

/** The one line when it takes work again. */
export function resumeMessage(refusedMs: number, r: Reading | null): string {
  return `disk: taking new work again after ${Math.round(refusedMs / 1000)} s (${space(r)})`
}
