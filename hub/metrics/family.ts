// One metric family of GET /metrics as data: its name, type, help, label names, and how one
// scrape's snapshot fills it. Pure: registry.ts turns families into prom-client metrics.
import type { Snapshot } from './snapshot.ts'

export type Labels = Record<string, string>
export type Put = (labels: Labels, value: number) => void

export interface Family {
  type: 'gauge' | 'counter'
  name: string
  help: string
  labels: readonly string[]
  fill(s: Snapshot, put: Put): void
}

/** Which optional parts a hub has: their families exist only where the part does. */
export interface MetricParts {
  broker: boolean
  mqtt: boolean
  bridge: boolean
  attest: boolean
  attestSync: boolean
  /** statfs answered for the data folder. */
  filesystem: boolean
  /** /proc/self/io could be read (Linux). */
  io: boolean
}

/** A family without labels: one series, always there. */
export function single(
  type: Family['type'],
  name: string,
  help: string,
  value: (s: Snapshot) => number,
): Family {
  return { type, name, help, labels: [], fill: (s, put) => put({}, value(s)) }
}

export const ageSeconds = (s: Snapshot, at: number): number => Math.max(0, (s.now - at) / 1000)
