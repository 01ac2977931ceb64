// Aedes takes a connection's packets in slices of READ_SLICE bytes, not all that is buffered.
//
// Aedes (lib/client.js `nextBatch`) reads everything buffered on a connection, parses it, and reads
// again once every packet of that read is handled. A publisher that sends as fast as it can leaves
// up to 64 KB buffered: about 1,400 small PUBLISH packets, all handled at once. Until the last of
// them is admitted, every one holds its packet, its run and its batch operations, and each young
// generation collection copies them all (a 20,000-event burst: 63 scavenges, 450 ms of the main
// thread); meanwhile every other client waits for the whole read to be handled. In slices of
// 8 KB (about 180 packets) the same burst's scavenges take half that (bench/README.md "peer").
//
// Two rules keep Aedes' flow control as it was: no read while the parser is inside a slice (Aedes
// may ask from within it, once a packet is handled at once, and mqtt-packet's parser is not
// re-entrant), and a slice that completes no packet (one packet larger than a slice) is followed
// by the next one at once, since no handled packet will ask for it.
import type { Duplex } from 'node:stream'

export const READ_SLICE = 8 * 1024

/** The Aedes client parts this relies on (aedes 1.2.0 lib/client.js). */
interface AedesClientParts {
  _parser: { parse(buf: Buffer): unknown }
  /** Packets of the current read not yet handled. */
  _parsingBatch: number
  /** Reads and parses what is buffered once `_parsingBatch` reaches 0. */
  _nextBatch(err?: Error): void
}

/** Makes Aedes' `client` read `conn` READ_SLICE bytes at a time. */
export function readInSlices(conn: Duplex, client: unknown, slice = READ_SLICE): void {
  const c = client as AedesClientParts
  const read = conn.read.bind(conn)
  const parse = c._parser.parse.bind(c._parser)
  let parsing = false
  let askedWhileParsing = false

  conn.read = (size?: number) => {
    if (size !== undefined && size !== null) return read(size)
    if (parsing) {
      askedWhileParsing = true
      return null
    }
    return conn.readableLength > slice ? read(slice) : read()
  }

  c._parser.parse = (buf: Buffer) => {
    parsing = true
    askedWhileParsing = false
    let left: unknown
    try {
      left = parse(buf)
    } finally {
      parsing = false
    }
    // Every packet of this slice is handled (or it held none whole): Aedes asked meanwhile, or
    // more is buffered, and no packet in flight will ask again. Asked from a microtask, so a run
    // of slices does not deepen the stack; not if a read has started a batch since.
    if (c._parsingBatch === 0 && (askedWhileParsing || conn.readableLength > 0))
      queueMicrotask(() => {
        if (c._parsingBatch === 0) c._nextBatch()
      })
    return left
  }
}
