// The hub's listing sync (automatic in the hub): wraps the attestation part,
// so the same loop that owns the attestation store also builds listings queued as drafts while
// it held the store, and posts queued listings when the market answers.
import type { AttestStore } from '../attest/store.ts'
import type { AttestationParts } from '../daemon/parts.ts'
import type { Log } from '../log.ts'
import { svcPaths } from '../paths.ts'
import { readKey } from './market-key.ts'
import { type ListingSyncLoop, startListingSync } from './sync.ts'

export interface HubListingSyncOptions {
  store: AttestStore
  /** The agent the hub attests for (`[chain] agent_id`); null: drafts wait. */
  agentId: string | null
  env?: NodeJS.ProcessEnv
  log: Log
  intervalMs?: number
}

export function withListingSync(
  base: AttestationParts,
  o: HubListingSyncOptions,
): AttestationParts & { listings: () => ListingSyncLoop | null } {
  const env = o.env ?? process.env
  let loop: ListingSyncLoop | null = null
  return {
    ...base,
    listings: () => loop,
    start() {
      base.start?.()
      loop = startListingSync(
        {
          home: svcPaths(env).home,
          key: () => readKey(env),
          ...(o.agentId !== null ? { builder: { store: o.store, agentId: o.agentId } } : {}),
          log: { info: (m) => o.log.info(m), warn: (m) => o.log.warn(m) },
        },
        o.intervalMs ?? 5000,
      )
    },
    async close() {
      // Stop posting before the store closes: a pass in flight may be building from it.
      await loop?.stop()
      await base.close?.()
    },
  }
}
