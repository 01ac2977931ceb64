// A store's entries as the archive holds them (hub/backup/README.md, "The archive"): each entry
// is its key's length (u32, big-endian), the key, its value's length, the value. Entries are
// grouped into parts of a bounded size, so a backup holds one part in memory at a time (tar
// needs an entry's size before its bytes) and a restore checks each part's checksum.

/** About 4 MiB: a few parts for a Pi-sized store, and little memory for each. */
export const PART_BYTES = 4 * 1024 * 1024

export interface KvPart {
  bytes: Buffer
  entries: number
}

/** `entries` grouped into parts of at most `partBytes` (an entry larger than that is a part alone). */
export async function* kvParts(
  entries: AsyncIterable<readonly [Uint8Array, Uint8Array]>,
  partBytes = PART_BYTES,
): AsyncGenerator<KvPart> {
  let chunks: Buffer[] = []
  let size = 0
  let count = 0
  for await (const [k, v] of entries) {
    const head = Buffer.allocUnsafe(4)
    head.writeUInt32BE(k.length)
    const mid = Buffer.allocUnsafe(4)
    mid.writeUInt32BE(v.length)
    const n = 8 + k.length + v.length
    if (size > 0 && size + n > partBytes) {
      yield { bytes: Buffer.concat(chunks, size), entries: count }
      chunks = []
      size = 0
      count = 0
    }
    chunks.push(head, Buffer.from(k), mid, Buffer.from(v))
    size += n
    count++
  }
  if (count > 0) yield { bytes: Buffer.concat(chunks, size), entries: count }
}

/** The entries of one part; `where` names it in the error when the part is cut short. */
export function* decodeKv(part: Buffer, where: string): Generator<[Buffer, Buffer]> {
  let at = 0
  const take = (what: string): Buffer => {
    if (at + 4 > part.length) throw new Error(`${where}: cut short at byte ${at} (${what} length)`)
    const n = part.readUInt32BE(at)
    if (at + 4 + n > part.length) throw new Error(`${where}: cut short at byte ${at} (${what} of ${n} bytes)`)
    const out = part.subarray(at + 4, at + 4 + n)
    at += 4 + n
    return out
  }
  while (at < part.length) yield [take('key'), take('value')]
}

/** Strings as bytes (the engine's records are utf8 text). */
export async function* utf8Entries(
  entries: AsyncIterable<readonly [string, string]>,
): AsyncGenerator<[Buffer, Buffer]> {
  for await (const [k, v] of entries) yield [Buffer.from(k, 'utf8'), Buffer.from(v, 'utf8')]
}
