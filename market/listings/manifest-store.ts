// Pinned manifests, parsed once: a CID names immutable bytes, so a parsed copy never goes stale.
import type { Manifest } from '../../records/index.ts'
import type { BlockStore } from '../files/blockstore.ts'
import { parseCid, readFileBytes } from '../files/unixfs.ts'

const MAX_CACHED = 32

export class ManifestStore {
  private readonly cache = new Map<string, Manifest>()
  constructor(private readonly blocks: BlockStore) {}

  async get(cid: string): Promise<Manifest> {
    const hit = this.cache.get(cid)
    if (hit) return hit
    const m = JSON.parse(
      Buffer.from(await readFileBytes(parseCid(cid), this.blocks)).toString('utf8'),
    ) as Manifest
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(cid, m)
    return m
  }
}
