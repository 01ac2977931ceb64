// How far back the engine's run history reaches, as the hub shows it: the `history` object of
// `GET /hub/status`, the line `svc hub status` prints and the one `svc sop runs` prints after its
// first. From HubEngine.history() (sops/hub-engine.ts); the bounds are hub.toml `[history]`
// (hub/engine/README.md, "Retention"). Pure.
//
// Not in `svc/hub/state`: that payload's fields are listed in hub/README.md ("MQTT state
// topics"), and the log's size changes with every event, so it would be sent again every second.
import type { HistoryReach } from '../../sops/hub-engine.ts'
import { bytesText } from '../disk/reserve.ts'

const DAY_MS = 86_400_000

/** A span as the CLI and the status line print it: `42s`, `5m`, `3h`, `9d`. */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.floor(s / 60)}m`
      : s < 172_800
        ? `${Math.floor(s / 3600)}h`
        : `${Math.floor(s / 86_400)}d`
}

const MiB = 1024 * 1024

export interface HistoryView {
  /** Creation time of the oldest run kept (ISO), as of the last retention pass; null: none. */
  oldest_at: string | null
  /** Bytes of the history log's segment files. */
  log_bytes: number
  segments: number
  /** hub.toml `[history] max_age_days` and `max_mb`: finished runs past either are dropped. */
  max_age_days: number
  max_mb: number
}

export function historyView(h: HistoryReach): HistoryView {
  return {
    oldest_at: h.oldestAt === null ? null : new Date(h.oldestAt).toISOString(),
    log_bytes: h.logBytes,
    segments: h.segments,
    max_age_days: h.maxAgeMs / DAY_MS,
    max_mb: h.maxBytes / MiB,
  }
}

/**
 * `30 days`, `1 day`; a bound that is not whole days (a test's window) as `ageText` says a span
 * (the CLI's `age` by default; the console passes its own).
 */
export function daysText(days: number, ageText: (ms: number) => string = age): string {
  return Number.isInteger(days) ? `${days} day${days === 1 ? '' : 's'}` : ageText(days * DAY_MS)
}

/** Said while the oldest run is null: retention reads it, so runs made since its last pass wait. */
export const NO_OLDEST = 'no runs when retention last looked, at most a minute ago'

/** Where the history starts: `back to <ISO> (6d ago)`, as of retention's last pass. */
export function reachText(v: HistoryView, now: number): string {
  if (v.oldest_at === null) return NO_OLDEST
  return `back to ${v.oldest_at} (${age(now - Date.parse(v.oldest_at))} ago)`
}

/** `svc hub status`'s history line. */
export function historyLine(v: HistoryView, now: number): string {
  return (
    `${reachText(v, now)}, ${bytesText(v.log_bytes)} of ${bytesText(v.max_mb * MiB)} in ` +
    `${v.segments} segment${v.segments === 1 ? '' : 's'}; finished runs older than ` +
    `${daysText(v.max_age_days)} are dropped`
  )
}

/** `svc sop runs`'s line after its first: where the history starts and what is kept. */
export function keptLine(v: HistoryView, now: number): string {
  return (
    `history kept: ${reachText(v, now)}, ${bytesText(v.log_bytes)} ` +
    `(${daysText(v.max_age_days)} or ${bytesText(v.max_mb * MiB)}, whichever first)`
  )
}
