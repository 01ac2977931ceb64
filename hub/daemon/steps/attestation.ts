// The attestation part (chain_attest, its store, its sync and listing loops), when this build
// and the config have it: built before the engine, whose tools it adds to, and closed after it.
import { join } from 'node:path'
import type { Sop } from '../../../sops/types.ts'
import type { PublishPort } from '../../../tools/mqtt_publish.ts'
import type { ConsoleAttestation } from '../../console/context.ts'
import type { DiskGuard } from '../../disk/guard.ts'
import type { AttestationParts } from '../parts.ts'
import type { StartContext } from './context.ts'

export interface HubAttestation {
  parts: AttestationParts
  /** The attestation store, guarded by the disk guard and kept by a backup; absent without one. */
  store: ConsoleAttestation['store'] | undefined
}

export async function startAttestation(
  { config, log, parts, closers }: StartContext,
  o: { publish: PublishPort; sops: readonly Sop[]; disk: DiskGuard },
): Promise<HubAttestation> {
  const { publish, sops, disk } = o
  const attestation: AttestationParts = parts.attestation
    ? await parts.attestation({ publish, config, sops, log })
    : { tools: [] }
  if (attestation.close) closers.add('attestation', () => attestation.close!())
  const attestStore = attestation.console?.store
  if (attestStore) {
    attestStore.onWriteError((err) => disk.writeFailed('attest', err))
    // attestStorePath(dataDir), not imported: the attestation part loads only when used.
    disk.addStore({
      name: 'attest',
      path: join(config.dataDir, 'attest'),
      reopen: () => attestStore.reopen(),
    })
  }
  return { parts: attestation, store: attestStore }
}
