// What chain_attest needs from the hub, declared here so tools/ never imports hub/: a line store
// that appends once per idempotency key, and the device key that signs lines. hub/attest
// implements both (AttestStore, DeviceSigner) and the hub injects them.
import type { Hex } from 'viem'

/** What a stored line gives back to the step (its output). */
export interface StoredLine {
  /** 0-based position in the store = line seq+1 of operations.jsonl. */
  seq: number
  line: string
  paramsHash: Hex
  requestHash: Hex
}

/** One canonical line with its hash and the device's signature, keyed by the step's idempotency key. */
export interface LineToStore {
  idempotencyKey: string
  action: string
  requestUri: string
  line: string
  paramsHash: Hex
  signature: Hex
  signer: Hex
}

export interface LineStore {
  /** Stores the line durably (a sync batch) before resolving; a known key stores nothing. */
  append(input: LineToStore): Promise<{ record: StoredLine }>
  byIdempotencyKey(key: string): Promise<StoredLine | undefined>
}

export interface LineSigner {
  readonly address: Hex
  /** EIP-191 personal-message signature over the line's exact UTF-8 bytes. */
  signLine(line: string): Promise<Hex>
}
