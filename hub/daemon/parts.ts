// The shapes of the parts the hub composes (hub.ts): the bridge, the local API, the agent and
// the attestation part. Kept apart from hub.ts so the real parts (real-parts.ts) and the listing
// sync can be typed without importing the daemon itself.
import type { FastifyInstance } from 'fastify'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { Sop } from '../../sops/types.ts'
import type { BridgeStats, HandoverResult, HelloInfo, Json, SendResult } from '../../bridge/types.ts'
import type { BoardPort } from '../../tools/board_send.ts'
import type { PublishPort } from '../../tools/mqtt_publish.ts'
import type { Tool } from '../../tools/types.ts'
import type { AgentAdapter } from '../agent/types.ts'
import type { HubAbout } from '../api/token.ts'
import type { Log } from '../log.ts'
import type { BoardEntry, HubConfig } from './config.ts'
import type { ConsoleAttestation } from '../console/context.ts'
import type { ConsoleOptions, RunningConsole } from '../console/index.ts'
import type { HubService } from '../service/index.ts'

/** What the hub needs of the bridge (bridge/index.ts `createBridge`). */
export interface BridgeLike extends BoardPort {
  start(): Promise<void>
  /** The board's answer, with why it failed when it did (the local API picks its status from it). */
  send(board: string, cmd: string, args: Json, opts: { timeoutMs: number }): Promise<SendResult>
  /** Each board's state and counters (`svc board status`). */
  stats(): BridgeStats
  /** The port handover a firmware flash needs (bridge/index.ts); absent: boards cannot be flashed. */
  release?(board: string): Promise<HandoverResult>
  reclaim?(board: string): Promise<HandoverResult>
  onHello?(fn: (board: string, info: HelloInfo) => void): () => void
  close(): Promise<void>
}

export interface LocalApiParts {
  /** Builds the local API app (routes for runs, approvals…); the hub adds its own and listens. */
  create(o: { engine: HubEngine; token: string; log: Log }): FastifyInstance | Promise<FastifyInstance>
  /** A fresh bearer token, stored where the CLI finds it. */
  issueToken(): Promise<string>
  /** Tells the CLI where the API listens, and which SOP directory and data folder the hub uses. */
  writeInfo(url: string, about: HubAbout): Promise<void>
  removeInfo?(): Promise<void>
  /** The home whose own files (the device key, hub.toml…) a backup keeps (hub/backup/). */
  home?: string
}

/** The parts composed by the hub; `hub/daemon/real-parts.ts` gives the real ones, tests fewer. */
export interface HubParts {
  createBridge?: (o: {
    boards: BoardEntry[]
    publish: PublishPort
    log: Log
    /** Where each board's availability goes (hub/daemon/board-availability.ts). */
    availability?: (board: string, state: 'online' | 'offline') => void
  }) => BridgeLike | Promise<BridgeLike>
  localApi?: LocalApiParts
  agent?: AgentAdapter
  /**
   * Attestation: chain_attest, the store behind it, its sync and listing loops and their API
   * routes. Built before the engine, closed after it; loaded only when a SOP or [chain] needs it.
   */
  attestation?: (o: {
    publish: PublishPort
    config: HubConfig
    sops: readonly Sop[]
    log: Log
  }) => Promise<AttestationParts>
  /** The web console (hub/console/), started when `[console] enabled`. */
  console?: (o: Omit<ConsoleOptions, 'home'>) => Promise<RunningConsole>
  /** systemd's notify protocol and watchdog (hub/service/); null when no service manager listens. */
  service?: (o: { log: Log }) => HubService | null
}

/** What the attestation part adds to the hub: tools, a loop started once the hub is up, API routes. */
export interface AttestationParts {
  tools: Tool[]
  /** Started once the hub is up (an attestation sync loop). */
  start?(): void
  /** Routes added to the local API before it listens (the attestation store's status and export). */
  routes?(app: FastifyInstance): void
  close?(): Promise<void>
  /** The store and sync as the console shows them (counts, status, "sync now"). */
  console?: ConsoleAttestation
}
