// The progress of `svc attest sync` and `svc board flash`: a bar redrawn in place on a terminal,
// plain lines (a few) when stderr is a file or a pipe. Pure text; the caller writes it.
import { type SyncProgressFigures, etaText } from '../hub/attest/sync-status.ts'

/** `[#########.........]  450/1000 lines  312.5 lines/s  ETA 2s` in `width` columns of bar. */
export function progressBar(p: SyncProgressFigures, width = 30): string {
  const frac = p.total > 0 ? Math.min(1, p.done / p.total) : 1
  const full = Math.round(frac * width)
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${p.done}/${p.total} lines  ${p.linesPerSec} lines/s  ETA ${etaText(p.etaSec)}`
}

/** The same figures as one plain line. */
export function progressLine(p: SyncProgressFigures): string {
  return `sync: ${p.done}/${p.total} lines, ${p.linesPerSec} lines/s, ETA ${etaText(p.etaSec)}`
}

/** What a flash reports (the local API's NDJSON progress lines). */
export interface FlashProgress {
  phase: string
  percent: number | null
  rollback: boolean
}

/** `[###############...............]  writing  50%` (`rollback: writing` while restoring). */
export function flashBar(p: FlashProgress, width = 30): string {
  const full = p.percent === null ? 0 : Math.round((Math.max(0, Math.min(100, p.percent)) / 100) * width)
  const what = `${p.rollback ? 'rollback: ' : ''}${p.phase}`
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${what}${p.percent === null ? '' : ` ${String(p.percent).padStart(3)}%`}`
}

/** The same as one plain line. */
export function flashLine(board: string, p: FlashProgress): string {
  return `flash ${board}: ${p.rollback ? 'rollback: ' : ''}${p.phase}${p.percent === null ? '' : ` ${p.percent}%`}`
}
