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
//
// One slice is read ahead. A slice's QoS 1 packets are done when their PUBACKs may go, once what
// they caused is stored (ack-after-store.ts), so Aedes alone would leave the main thread idle
// through every slice's sync. Once every packet of the slices before the newest is done, the next
// slice is read and handled while the newest's are stored; their operations go into the batch
// after it (hub/engine/group-commit.ts). At most two slices are in flight on a connection, and
// none is read ahead while `mayReadAhead` says no (the trigger feed holds messages at its cap or
// for disk room: then Aedes reads no more from that client, as before).
import type { Duplex } from 'node:stream'

export const READ_SLICE = 8 * 1024

/** The Aedes client parts this relies on (aedes 1.2.0 lib/client.js). */
interface AedesClientParts {
  _parser: { parse(buf: Buffer): unknown; on(event: 'packet', listener: () => void): unknown }
  /** Packets of the current read not yet handled. */
  _parsingBatch: number
  /** Reads and parses what is buffered once `_parsingBatch` reaches 0. */
  _nextBatch(err?: Error): void
  _paused?: boolean
}

export interface SliceOptions {
  slice?: number
  /** False while the next slice must not be read ahead of the packets in flight. */
  mayReadAhead?: () => boolean
}

/** Makes Aedes' `client` read `conn` a slice at a time, one slice ahead. */
export function readInSlices(conn: Duplex, client: unknown, opts: SliceOptions = {}): void {
  const slice = opts.slice ?? READ_SLICE
  const mayReadAhead = opts.mayReadAhead ?? (() => true)
  const c = client as AedesClientParts
  const read = conn.read.bind(conn)
  const parse = c._parser.parse.bind(c._parser)
  let parsing = false
  let askedWhileParsing = false
  /** Packets the newest slice held, and a read ahead waiting for its turn. */
  let newest = 0
  let counted = 0
  let ahead: NodeJS.Immediate | null = null
  c._parser.on('packet', () => counted++)

  conn.read = (size?: number) => {
    if (size !== undefined && size !== null) return read(size)
    if (parsing) {
      askedWhileParsing = true
      return null
    }
    return conn.readableLength > slice ? read(slice) : read()
  }

  // The packets in flight are the newest slice's alone: the next slice may be read now.
  const aheadDue = (): boolean =>
    !parsing &&
    !c._paused &&
    !conn.destroyed &&
    c._parsingBatch > 0 &&
    c._parsingBatch <= newest &&
    conn.readableLength > 0 &&
    mayReadAhead()
  const readAhead = (): void => {
    if (ahead || !aheadDue()) return
    // After this turn's microtasks: the newest slice's admissions have reached their batch.
    ahead = setImmediate(() => {
      ahead = null
      if (!aheadDue()) return
      const buf = conn.read()
      if (buf) c._parser.parse(buf)
    })
  }

  // A packet done, or more arrived after a slice was read (Aedes' own 'readable' listener reads
  // only once every packet in flight is done).
  const nextBatch = c._nextBatch
  c._nextBatch = (err?: Error) => {
    nextBatch(err)
    if (!err) readAhead()
  }
  conn.on('readable', readAhead)

  c._parser.parse = (buf: Buffer) => {
    parsing = true
    askedWhileParsing = false
    counted = 0
    let left: unknown
    try {
      left = parse(buf)
    } finally {
      parsing = false
      newest = counted
    }
    // Every packet of this slice is handled (or it held none whole): Aedes asked meanwhile, or
    // more is buffered, and no packet in flight will ask again. Asked from a microtask, so a run
    // of slices does not deepen the stack; not if a read has started a batch since.
    if (c._parsingBatch === 0 && (askedWhileParsing || conn.readableLength > 0))
      queueMicrotask(() => {
        if (c._parsingBatch === 0) c._nextBatch()
      })
    else readAhead()
    return left
  }
}
