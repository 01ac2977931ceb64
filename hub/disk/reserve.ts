// How much free space the hub keeps for itself (`[disk] reserve_mb`, `reserve_percent`), and the
// lines around it. Pure: the sizes come from statfs at the edge (watch.ts).
//
// Below the reserve the hub takes no new work (guard.ts); above it work is taken again only once
// a margin more is free, so a disk hovering at the line does not flip the hub in and out of
// refusing with every file LevelDB writes or deletes.

const MiB = 1024 * 1024

/** `[disk]` as hub.toml sets it; null = not set. */
export interface ReserveSetting {
  mb: number | null
  percent: number | null
}

export const DEFAULT_RESERVE_MB = 64
export const DEFAULT_RESERVE_PERCENT = 2
/** The default's ceiling: 2% of a large disk is more than a hub's bounded history needs kept free. */
export const DEFAULT_RESERVE_MAX_MB = 1024

/**
 * The reserve on a filesystem of `sizeBytes`. Set in hub.toml: the larger of the settings given.
 * Not set: the larger of 64 MiB and 2% of the filesystem, at most 1 GiB, and never more than a
 * quarter of it (a default that would leave a small disk refusing from the start helps nobody; a
 * reserve set by hand is taken as given).
 */
export function reserveBytes(s: ReserveSetting, sizeBytes: number): number {
  const byPercent = (p: number): number => Math.ceil((sizeBytes * p) / 100)
  if (s.mb !== null || s.percent !== null)
    return Math.max(s.mb !== null ? s.mb * MiB : 0, s.percent !== null ? byPercent(s.percent) : 0)
  const fallback = Math.max(DEFAULT_RESERVE_MB * MiB, byPercent(DEFAULT_RESERVE_PERCENT))
  return Math.min(fallback, DEFAULT_RESERVE_MAX_MB * MiB, Math.floor(sizeBytes / 4))
}

/** Free bytes at or above which a refusing hub takes work again: the reserve and a margin. */
export function resumeAt(reserve: number): number {
  return reserve + Math.max(MiB, Math.ceil(reserve / 10))
}

/**
 * Close enough to the line that a reading must be fresh before work is admitted: the watcher's
 * timer alone could miss a fast fill between two readings.
 */
export function nearLine(free: number, reserve: number): boolean {
  return free < 2 * reserve + 16 * MiB
}

/** Bytes as people read them, in the unit `reserve_mb` counts in (`23.4 MiB`, as `df -h` does). */
export function bytesText(n: number): string {
  if (n < 1024) return `${n} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let v = n / 1024
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`
}
