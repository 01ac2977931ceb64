// The progress of `svc attest sync`: a bar redrawn in place on a terminal, plain lines (at most
// one a second) when stderr is a file or a pipe. Pure text; the caller writes it.
import { type SyncProgressFigures, etaText } from '../attest/sync-status.ts'

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
