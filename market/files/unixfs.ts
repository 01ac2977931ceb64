// Content addressing the way `ipfs add --cid-version=1` does it (market/API.md, "Files and CIDs"): CIDv1,
// raw leaves, sha2-256, fixed 256 KiB chunks, balanced DAG of at most 174 links per node, a
// one-chunk file is its raw leaf. A real Kubo node adding the same bytes gets the same CID.
import * as dagPb from '@ipld/dag-pb'
import { importBytes } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import type { BlockStore } from './blockstore.ts'

export const CHUNK_SIZE = 262_144
export const MAX_LINKS = 174

export async function addBytes(bytes: Uint8Array, store: BlockStore): Promise<CID> {
  const r = await importBytes(bytes, store, {
    cidVersion: 1,
    rawLeaves: true,
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: CHUNK_SIZE }),
    layout: balanced({ maxChildrenPerNode: MAX_LINKS }),
  })
  return r.cid
}

/** The file's bytes, in order, walking the DAG depth-first from its root. */
export async function* catFile(cid: CID, store: BlockStore): AsyncGenerator<Uint8Array> {
  const block = await store.get(cid)
  if (cid.code === raw.code) {
    yield block
    return
  }
  if (cid.code !== dagPb.code) throw new Error(`unsupported codec 0x${cid.code.toString(16)} for ${cid}`)
  const node = dagPb.decode(block)
  // Only raw-leaf DAGs are stored here (addBytes), so an inner node without links is corrupt.
  if (node.Links.length === 0) throw new Error(`${cid} is not a raw-leaves UnixFS file node`)
  for (const link of node.Links) yield* catFile(link.Hash, store)
}

export async function readFileBytes(cid: CID, store: BlockStore): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  for await (const p of catFile(cid, store)) parts.push(p)
  return Buffer.concat(parts)
}

export function parseCid(s: string): CID {
  return CID.parse(s)
}
