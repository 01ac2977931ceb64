// Test helpers for listings: a real attestation store (LevelDB in a temp folder) holding lines in
// chosen states. The market does not check attestations on upload (market/API.md,
// "POST /api/agent/listings": the verify route does), so the signatures here are shaped right but not checked.
import { join } from 'node:path'
import type { Hex } from 'viem'
import { type AttestStore, openAttestStore } from '../../hub/attest/store.ts'
import type { AttestState } from '../../hub/attest/record.ts'
import { canonicalLine, lineHash } from '../../records/index.ts'
import { tempDir } from '../helpers/tmp.ts'

interface T {
  teardown(fn: () => unknown): void
}

export function opLine(i: number): string {
  return canonicalLine({ action: 'vend.dispense', board: 'vend1', n: i, slot: `A${i % 4}` })
}

/** A store with one line per state given, in order. */
export async function storeWith(
  t: T,
  states: AttestState[],
): Promise<{ store: AttestStore; path: string; home: string }> {
  const home = await tempDir(t, 'svc-listing-')
  const path = join(home, 'data', 'attest')
  const store = await openAttestStore(path)
  let closed = false
  t.teardown(async () => {
    if (!closed) await store.close()
  })
  const close = store.close.bind(store)
  store.close = async () => {
    closed = true
    await close()
  }
  const recs = []
  for (let i = 0; i < states.length; i++) {
    const line = opLine(i)
    const r = await store.append({
      idempotencyKey: `k${i}`,
      action: 'vend.dispense',
      requestUri: 'svc://vend1/dispense',
      line,
      paramsHash: lineHash(line),
      signature: `0x${'11'.repeat(65)}` as Hex,
      signer: `0x${'22'.repeat(20)}` as Hex,
    })
    recs.push({ ...r.record, state: states[i]! })
  }
  await store.update(recs)
  return { store, path, home }
}

export const FIELDS = {
  title: 'Vend1 dispenses',
  summary: 'Attested dispense lines',
  description: 'Twenty characters at least, describing the dataset.',
  machineType: 'vending',
  license: 'research',
  priceNative: '0.01',
}
