// One scrape's figures, read once from the sources `svc hub status`, the console and
// `svc board status` already read (the engine's live runs and kept triggers, the MQTT intake's
// backlog, bridge.stats(), the attestation store's counts, Aedes' own counters) plus the disk.
// Every metric of a scrape is filled from the same snapshot, so they agree with each other.
import type { Aedes } from 'aedes'
import type { BridgeStats } from '../../bridge/types.ts'
import type { HubEngine, RunSummary } from '../../sops/hub-engine.ts'
import { backlog, type SopBacklog } from '../../sops/run/backlog.ts'
import type { Diagnostic, Sop } from '../../sops/types.ts'
import type { AttestCounts } from '../attest/record.ts'
import type { SyncStatus } from '../attest/sync-status.ts'
import type { MqttBacklog } from '../triggers/intake.ts'
import type { HubCounts } from './counts.ts'
import type { FilesystemSpace, ProcessIo, StoreSize } from './disk.ts'

/** What the hub hands GET /metrics: its parts, read at each scrape, never changed. */
export interface MetricSources {
  engine: HubEngine
  counts: HubCounts
  sops(): readonly Sop[]
  diagnostics(): readonly Diagnostic[]
  version: string
  /** The embedded broker, or null when the hub uses an external one. */
  aedes: Aedes | null
  /** Whether the hub's own MQTT session is connected. */
  sessionConnected(): boolean
  /** The MQTT trigger intake's backlog (hub/triggers/intake.ts); null without an MQTT source. */
  mqttBacklog(): MqttBacklog | null
  bridge: { stats(): BridgeStats } | null
  /** The attestation store and its sync, when the attestation part is loaded. */
  attestation: {
    store: { counts(): AttestCounts; queue(limit: number): Promise<{ createdAt: string }[]> }
    sync(): SyncStatus | null
  } | null
  dataDir: string
}

/** The disk and the oldest run, injected so the snapshot can be built without touching either. */
export interface SnapshotReaders {
  storeSizes(dataDir: string): Promise<StoreSize[]>
  filesystemSpace(dataDir: string): Promise<FilesystemSpace | null>
  processIo(): Promise<ProcessIo | null>
  oldestRunAt(): Promise<number | null>
}

export interface BrokerFigures {
  clients: number
  inFlight: number
  queued: number
  messages: number
}

export interface Snapshot {
  now: number
  version: string
  brokerKind: 'embedded' | 'external'
  /** Every SOP a series is given for: the loaded ones, and any a run or kept trigger still names. */
  sopNames: string[]
  sops: { loaded: number; invalid: number }
  counts: HubCounts
  live: readonly RunSummary[]
  kept: SopBacklog[]
  sessionConnected: boolean
  mqtt: MqttBacklog | null
  broker: BrokerFigures | null
  bridge: BridgeStats | null
  attest: { counts: AttestCounts; oldestUnsyncedAt: number | null; sync: SyncStatus | null } | null
  stores: StoreSize[]
  filesystem: FilesystemSpace | null
  io: ProcessIo | null
  oldestRunAt: number | null
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/**
 * Aedes' own figures: clients connected, messages its emitter is delivering now and those
 * waiting for a slot (mqemitter's `current` and `length`), and every message it has numbered.
 */
export function brokerFigures(aedes: Aedes): BrokerFigures {
  const a = aedes as unknown as {
    connectedClients?: unknown
    counter?: unknown
    mq?: Record<string, unknown>
  }
  return {
    clients: num(a.connectedClients),
    inFlight: num(a.mq?.current),
    queued: num(a.mq?.length),
    messages: num(a.counter),
  }
}

async function attestFigures(a: NonNullable<MetricSources['attestation']>): Promise<Snapshot['attest']> {
  const counts = a.store.counts()
  let oldestUnsyncedAt: number | null = null
  try {
    const [first] = await a.store.queue(1)
    const at = first ? Date.parse(first.createdAt) : Number.NaN
    if (Number.isFinite(at)) oldestUnsyncedAt = at
  } catch {
    // a store closing under the scrape: the counts still stand
  }
  return { counts, oldestUnsyncedAt, sync: a.sync() }
}

export async function takeSnapshot(src: MetricSources, read: SnapshotReaders): Promise<Snapshot> {
  const now = Date.now()
  const sops = src.sops()
  const live = src.engine.liveRuns()
  const kept = backlog(src.engine.keptTriggers(), now)
  const names = new Set(sops.map((s) => s.name))
  for (const r of live) names.add(r.sop)
  for (const k of kept) names.add(k.sop)
  const snapshot: Snapshot = {
    now,
    version: src.version,
    brokerKind: src.aedes ? 'embedded' : 'external',
    sopNames: [...names].sort(),
    sops: {
      loaded: sops.length,
      invalid: new Set(
        src
          .diagnostics()
          .filter((d) => d.severity === 'error')
          .map((d) => d.file),
      ).size,
    },
    // Copies: the counts go on moving while the rest of the snapshot is read.
    counts: {
      events: new Map(src.counts.events),
      runsStarted: new Map(src.counts.runsStarted),
      runsFinished: new Map(src.counts.runsFinished),
    },
    live,
    kept,
    sessionConnected: src.sessionConnected(),
    mqtt: src.mqttBacklog(),
    broker: src.aedes ? brokerFigures(src.aedes) : null,
    bridge: src.bridge ? src.bridge.stats() : null,
    attest: null,
    stores: [],
    filesystem: null,
    io: null,
    oldestRunAt: null,
  }
  // One after the other: see disk.ts on the threads these share with LevelDB.
  if (src.attestation) snapshot.attest = await attestFigures(src.attestation)
  snapshot.oldestRunAt = await read.oldestRunAt().catch(() => null)
  snapshot.stores = await read.storeSizes(src.dataDir)
  snapshot.filesystem = await read.filesystemSpace(src.dataDir)
  snapshot.io = await read.processIo()
  return snapshot
}
