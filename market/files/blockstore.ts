// A file-per-block blockstore under the market's data dir: `<dir>/<last 2 chars>/<cid>`. Blocks
// are immutable and named by their hash, so a write is the atomic small-file write (a power cut
// leaves the block whole or absent, never short) and a second write of the same block is a no-op. Implements the part of interface-blockstore the importer needs (put)
// plus get/has for reading files back.
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { CID } from 'multiformats/cid'
import { writeFileAtomic } from '../../files/atomic-file.ts'

export interface BlockStore {
  put(cid: CID, bytes: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<CID>
  get(cid: CID): Promise<Uint8Array>
  has(cid: CID): Promise<boolean>
}

async function collect(
  bytes: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
): Promise<Uint8Array> {
  if (bytes instanceof Uint8Array) return bytes
  const parts: Uint8Array[] = []
  for await (const p of bytes as AsyncIterable<Uint8Array>) parts.push(p)
  return Buffer.concat(parts)
}

export function fsBlockStore(dir: string): BlockStore {
  const pathOf = (cid: CID): { folder: string; file: string } => {
    const s = cid.toString()
    const folder = join(dir, s.slice(-2))
    return { folder, file: join(folder, s) }
  }
  const has = async (cid: CID): Promise<boolean> => {
    try {
      await stat(pathOf(cid).file)
      return true
    } catch {
      return false
    }
  }
  return {
    has,
    async put(cid, bytes) {
      const { file } = pathOf(cid)
      if (await has(cid)) return cid
      const data = await collect(bytes)
      await writeFileAtomic(file, data)
      return cid
    },
    async get(cid) {
      return new Uint8Array(await readFile(pathOf(cid).file))
    },
  }
}
