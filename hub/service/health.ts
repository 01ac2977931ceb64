// Whether the hub earns its watchdog ping this turn: a pure decision from what the pinger
// measured. systemd restarts a hub that stops pinging (WatchdogSec=), so a ping says "this hub is
// doing its job": its event loop turns (the check itself ran on time), and its engine store takes
// writes (the heartbeat written last turn landed), or it is refusing new work on purpose, which
// a restart would not change (refusingHonestly in hub/disk/refusing.ts).

/** The engine store's heartbeat (store-probe.ts), as it stands when the check runs. */
export type StoreState =
  | { kind: 'ok' }
  | { kind: 'failed'; error: string }
  /** Written, not yet landed: synced batches are stuck behind a disk that does not answer. */
  | { kind: 'pending'; forMs: number }

export interface HealthInput {
  /** How late this check ran against its timer: how long the event loop gave no turn. */
  lagMs: number
  store: StoreState
  /** The hub is refusing new work because the disk is below its reserve (hub/disk/refusing.ts). */
  refusing: boolean
  /** Other stores (attestations, the broker's) whose writes failed with room on the disk. */
  failedStores?: readonly { store: string; error: string }[]
}

export interface HealthBounds {
  /** A check later than this means the loop stalled. */
  maxLagMs: number
  /** A heartbeat waiting this long means the store does not take writes. */
  maxWriteMs: number
}

export type Verdict =
  /** Healthy: ping, and say what the hub serves. */
  | { ping: true; note: null }
  /** Refusing new work on purpose: ping, and say why work is refused. */
  | { ping: true; note: string }
  /** Withhold the ping, for this reason (systemd restarts the hub at the next deadline). */
  | { ping: false; note: string }

const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

export function decideHealth(i: HealthInput, b: HealthBounds): Verdict {
  // A stalled loop is no better for refusing work honestly: nothing is being answered.
  if (i.lagMs > b.maxLagMs)
    return {
      ping: false,
      note: `the event loop stalled: the watchdog check ran ${s(i.lagMs)} late (bound ${s(b.maxLagMs)})`,
    }
  if (i.refusing) return { ping: true, note: 'refusing new work: the disk is below its reserve' }
  if (i.store.kind === 'failed')
    return { ping: false, note: `the engine store refuses writes: ${i.store.error}` }
  const other = i.failedStores?.[0]
  if (other) return { ping: false, note: `the ${other.store} store refuses writes: ${other.error}` }
  if (i.store.kind === 'pending' && i.store.forMs >= b.maxWriteMs)
    return { ping: false, note: `an engine store write has waited ${s(i.store.forMs)} without landing` }
  return { ping: true, note: null }
}
