// The disk's own floor under any durable write: a 1 KiB append to a file and its fdatasync(2),
// done on the calling thread (no thread pool, no LevelDB). What a store adds is above it; the
// peer aim in bench/README.md allows svc's p50 this much over Node-RED's.
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

/** Milliseconds per append + fdatasync, `n` times in `dir` (the folder the system under test writes in). */
export function fsyncFloor(dir: string, n: number): { p50: number; p99: number } {
  const fd = openSync(join(dir, 'floor'), 'a')
  const chunk = Buffer.alloc(1024, 0x78)
  const samples: number[] = []
  try {
    for (let i = 0; i < n; i++) {
      const t0 = performance.now()
      writeSync(fd, chunk)
      fdatasyncSync(fd)
      samples.push(performance.now() - t0)
    }
  } finally {
    closeSync(fd)
  }
  samples.sort((a, b) => a - b)
  const at = (p: number) =>
    samples[Math.min(samples.length - 1, Math.floor(samples.length * p))] ?? Number.NaN
  return { p50: at(0.5), p99: at(0.99) }
}
