// What the hub says about itself on MQTT, for the tools people already run beside it (Node-RED,
// Home Assistant, mosquitto_sub): the topics and their JSON. Pure; publisher.ts sends them.
//
// - `svc/hub/state` (retained, QoS 1): the hub's summary; `{"state":"offline"}` is its will on an
//   external broker and what a clean stop leaves.
// - `svc/approvals/pending` (retained, QoS 1): how many runs wait for a person, and which.
// - `svc/runs/<sop>/<run>` (QoS 0, not retained): each change of a run's state or step. Not
//   retained, or the broker would keep one message per run for ever.
import type { KeptTrigger } from '../../sops/engine-api.ts'
import type { RunSummary } from '../../sops/hub-engine.ts'
import { isParked, type RunState } from '../../sops/run/states.ts'
import { isTopicLevel } from '../../mqtt/topics.ts'
import type { DiskView } from '../disk/view.ts'

export const HUB_STATE_TOPIC = 'svc/hub/state'
export const PENDING_TOPIC = 'svc/approvals/pending'

/** A run's topic, or null when its SOP's name cannot stand as one topic level. */
export function runTopic(sop: string, run: string): string | null {
  return isTopicLevel(sop) && isTopicLevel(run) ? `svc/runs/${sop}/${run}` : null
}

/** The retained list stays small enough for any broker and any phone: the count is always whole. */
export const PENDING_LIST_MAX = 20

export const OFFLINE_STATE = JSON.stringify({ state: 'offline' })

const iso = (ms: number): string => new Date(ms).toISOString()

export interface HubSnapshot {
  since: number
  now: number
  clientId: string
  version: string
  sops: { loaded: number; invalid: number }
  boards: Record<string, 'online' | 'offline'>
  /** Unfinished runs. */
  live: readonly RunSummary[]
  kept: readonly KeptTrigger[]
  /** The disk guard's state (hub/disk/): `refusing` while no new work is taken; absent without one. */
  disk?: DiskView | null
}

interface Backlog {
  count: number
  oldest_at: string | null
}

function backlog(kept: readonly KeptTrigger[], kind: KeptTrigger['kind']): Backlog {
  let count = 0
  let oldest = Number.POSITIVE_INFINITY
  for (const k of kept) {
    if (k.kind !== kind) continue
    count++
    if (k.at < oldest) oldest = k.at
  }
  return { count, oldest_at: count > 0 ? iso(oldest) : null }
}

export function hubState(s: HubSnapshot): string {
  return JSON.stringify(hubStateObject(s))
}

/** `svc/hub/state`'s content as an object (the local API's `GET /hub/status` builds on it). */
export function hubStateObject(s: HubSnapshot) {
  const runs: Partial<Record<RunState, number>> = {
    pending: 0,
    running: 0,
    waiting_approval: 0,
    paused_checkpoint: 0,
  }
  let parked = 0
  for (const r of s.live) {
    runs[r.state] = (runs[r.state] ?? 0) + 1
    if (isParked(r.state)) parked++
  }
  return {
    state: 'online' as const,
    since: iso(s.since),
    at: iso(s.now),
    client_id: s.clientId,
    version: s.version,
    sops: s.sops,
    boards: s.boards,
    runs,
    approvals_pending: parked,
    held: backlog(s.kept, 'held'),
    deferred: backlog(s.kept, 'deferred'),
    ...(s.disk ? { disk: s.disk } : {}),
  }
}

/** `svc/approvals/pending`: the runs parked at a gate, oldest first (engine.pending()'s order). */
export function pendingApprovals(pending: readonly RunSummary[]): string {
  return JSON.stringify({
    count: pending.length,
    runs: pending.slice(0, PENDING_LIST_MAX).map((r) => ({
      run: r.id,
      sop: r.sop,
      step: r.gate?.step ?? r.current,
      kind: r.gate?.kind ?? null,
      reason: r.gate?.reason ?? null,
      ...(r.gate?.prompt !== undefined ? { prompt: r.gate.prompt } : {}),
      since: iso(r.gate?.since ?? r.updatedAt),
    })),
    truncated: pending.length > PENDING_LIST_MAX,
  })
}

/** What a watcher of one run needs to decide whether the change is news. */
export function runKey(r: RunSummary): string {
  return `${r.state}:${r.current ?? ''}`
}

export function runChange(r: RunSummary): string {
  return JSON.stringify({
    run: r.id,
    sop: r.sop,
    state: r.state,
    step: r.current,
    at: iso(r.updatedAt),
    ...(r.finishedAt !== undefined ? { finished_at: iso(r.finishedAt) } : {}),
    ...(r.error !== undefined ? { error: r.error } : {}),
  })
}
