// Pinning an uploaded file: into the local blockstore always, and into Kubo when configured.
import type { Failure } from '../../errors/codes.ts'
import type { BlockStore } from './blockstore.ts'
import { pinToKubo } from './kubo.ts'
import { addBytes } from './unixfs.ts'

export type PinOutcome = { ok: true; cid: string } | Failure<'UNREACHABLE' | 'UPSTREAM_FAILED'>

export async function pinFile(
  blocks: BlockStore,
  ipfsApi: string | null,
  name: string,
  bytes: Uint8Array,
): Promise<PinOutcome> {
  const cid = (await addBytes(bytes, blocks)).toString()
  if (ipfsApi) {
    const r = await pinToKubo(ipfsApi, name, bytes, cid)
    if (!r.ok) return r
  }
  return { ok: true, cid }
}
