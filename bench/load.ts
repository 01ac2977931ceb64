// The machine's load while a bench measured: printed beside its figures, since the build machine
// is shared and absolute figures move with it (bench/README.md).
import { cpus, loadavg } from 'node:os'

/** The 1, 5 and 15-minute load averages, one decimal each. */
export const loadAverages = (): string =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')

/** The line the benches end with. */
export const loadLine = (): string =>
  `load      ${loadAverages()} (1/5/15-min load average on ${cpus().length} cores while measuring)`
