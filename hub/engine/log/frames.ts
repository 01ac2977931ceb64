// The history log's frames (pure). A batch of the engine's writes is its operations, one frame
// each, then a commit frame; a batch without its commit frame was never acknowledged (its fsync
// had not returned) and is cut off when the log is opened (hub/engine/README.md, "The history log").
//
//   frame = u32 LE body length, u32 LE CRC-32 of the body, body
//   body  = kind (P put, D delete, C commit), u32 LE key length, key, value   (UTF-8)
//         | kind Z, u32 LE 0, a whole batch's frames deflated (raw, with DICTIONARY)
//
// The log writes each batch as one Z frame (`sealBatch`): its check covers the batch, so it is
// its own commit. A record is then found by the Z frame and its place inside the inflated batch.
// A body is at least 5 bytes, so zeroes (a page the disk never wrote) are never a frame.
//
// A batch may be followed by zeroes to the end of its page (`PAGE`, segment-log.ts `append`),
// which a scan steps over to the boundary.
import { promisify } from 'node:util'
import { crc32, deflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib'
import type { BatchOp } from '../group-commit.ts'

export const HEADER = 8
/** The page whose end a batch may be padded to (segment-log.ts `append`). */
export const PAGE = 4096
const KIND_PUT = 0x50
const KIND_DEL = 0x44
const KIND_COMMIT = 0x43
const KIND_DEFLATED = 0x5a
const MIN_BODY = 5
/** Larger than any batch the engine writes; a length past it is a torn or foreign header. */
export const MAX_BODY = 64 * 1024 * 1024

/** An operation of the engine's batches (group-commit.ts), as the log holds it. */
export type LogOp = BatchOp

/** One batch as bytes, and where each operation's frame starts and how long it is (null: local, not written). */
export interface EncodedBatch {
  bytes: Buffer
  frames: ({ off: number; len: number } | null)[]
}

export function encodeBatch(ops: readonly LogOp[]): EncodedBatch {
  let size = HEADER + MIN_BODY
  const keys: Buffer[] = []
  const values: (Buffer | null)[] = []
  for (const op of ops) {
    if (op.local) continue
    const k = Buffer.from(op.key)
    const v = op.type === 'put' ? Buffer.from(op.value) : null
    keys.push(k)
    values.push(v)
    size += HEADER + MIN_BODY + k.length + (v?.length ?? 0)
  }
  const bytes = Buffer.allocUnsafe(size)
  const frames: EncodedBatch['frames'] = []
  let at = 0
  const frame = (kind: number, k: Buffer | null, v: Buffer | null) => {
    const start = at
    const bodyLen = MIN_BODY + (k?.length ?? 0) + (v?.length ?? 0)
    bytes.writeUInt32LE(bodyLen, at)
    const body = at + HEADER
    bytes[body] = kind
    bytes.writeUInt32LE(k?.length ?? 0, body + 1)
    if (k) k.copy(bytes, body + MIN_BODY)
    if (v) v.copy(bytes, body + MIN_BODY + (k?.length ?? 0))
    bytes.writeUInt32LE(crc32(bytes.subarray(body, body + bodyLen)), at + 4)
    at = body + bodyLen
    return { off: start, len: at - start }
  }
  let j = 0
  for (const op of ops)
    if (op.local) frames.push(null)
    else {
      frames.push(frame(op.type === 'put' ? KIND_PUT : KIND_DEL, keys[j]!, values[j]!))
      j++
    }
  frame(KIND_COMMIT, null, null)
  return { bytes, frames }
}

/** The operation a whole frame (header and body) holds; an error if it is not one. */
export function decodeFrame(buf: Buffer): LogOp {
  const body = checkedBody(buf, 0)
  if (body === null) throw new Error('not a whole frame with a matching checksum')
  const op = opOf(body)
  if (op === null) throw new Error('a commit frame where a record was expected')
  return op
}

/** The body of the frame at `at`, or null when no whole frame with a matching checksum is there. */
function checkedBody(buf: Buffer, at: number): Buffer | null {
  if (buf.length - at < HEADER + MIN_BODY) return null
  const len = buf.readUInt32LE(at)
  if (len < MIN_BODY || len > MAX_BODY || buf.length - at - HEADER < len) return null
  const body = buf.subarray(at + HEADER, at + HEADER + len)
  if (crc32(body) !== buf.readUInt32LE(at + 4)) return null
  const kind = body[0]
  if (kind !== KIND_PUT && kind !== KIND_DEL && kind !== KIND_COMMIT && kind !== KIND_DEFLATED) return null
  if (body.readUInt32LE(1) > len - MIN_BODY) return null
  return body
}

function opOf(body: Buffer): LogOp | null {
  if (body[0] === KIND_COMMIT) return null
  const kl = body.readUInt32LE(1)
  const key = body.toString('utf8', MIN_BODY, MIN_BODY + kl)
  if (body[0] === KIND_DEL) return { type: 'del', key }
  return { type: 'put', key, value: body.toString('utf8', MIN_BODY + kl) }
}

/** A committed batch found in a segment: its operations with their frames' places in the segment. */
export interface ScannedBatch {
  /** `inner`: the record's frame inside the deflated batch at `off`. */
  ops: { op: LogOp; off: number; len: number; inner?: { off: number; len: number } }[]
  /** Where the segment's next batch starts. */
  end: number
}

/**
 * The committed batches in `buf` (a segment's bytes from `from`), and where the last of them
 * ends: bytes past it are a batch cut short (or garbage) and are no part of the log.
 */
export function scanBatches(buf: Buffer, from = 0): { batches: ScannedBatch[]; end: number } {
  const batches: ScannedBatch[] = []
  let at = 0
  let end = 0
  let ops: ScannedBatch['ops'] = []
  for (;;) {
    const body = checkedBody(buf, at)
    if (body === null) {
      // Zeroes to the next page boundary: a batch padded to its page's end. They are part of
      // the log (a reopen keeps them, a repair does not call them unreadable).
      const next = Math.ceil((from + at) / PAGE) * PAGE - from
      if (ops.length === 0 && next > at && next <= buf.length && zeroes(buf, at, next)) {
        end = next
        at = next
        continue
      }
      break
    }
    const len = HEADER + body.length
    if (body[0] === KIND_DEFLATED) {
      const inner = scanBatches(inflate(body))
      const ops = inner.batches.flatMap((b) => b.ops)
      for (const o of ops) o.inner = { off: o.off, len: o.len }
      for (const o of ops) {
        o.off = from + at
        o.len = len
      }
      batches.push({ ops, end: from + at + len })
      end = at + len
      at += len
      continue
    }
    const op = opOf(body)
    if (op === null) {
      end = at + len
      batches.push({ ops, end: from + end })
      ops = []
    } else ops.push({ op, off: from + at, len })
    at += len
  }
  return { batches, end: from + end }
}

function zeroes(buf: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (buf[i] !== 0) return false
  return true
}

/**
 * What the engine's records say again and again, for deflate to refer back to: a record of a
 * few hundred bytes deflated alone shrinks by a half, with this by two thirds or more. Fixed:
 * records written with it are read with it (a new one would be a new frame kind).
 */
const DICTIONARY = Buffer.from(
  [
    'ix!a!ix!s!ix!t!ix!q!meta!last!once!onceat!kept!',
    '"decisions":{},"decidedBy":{},"passedGates":[],"approvals":[],"coalesced":[],"coalescedCount":0,',
    '"gate":{"step":1,"kind":"approval","since":',
    '"runApproved":true,"error":"',
    '"level":"warn","msg":"failed: ',
    '"status":"failed","error":"',
    '"outcome":"deferred","reason":"',
    '"outcome":"held","reason":"hold: ',
    '"mode":"supervised"',
    '"type":"webhook","source":"',
    '"type":"cron","source":"',
    '"type":"manual","source":"',
    '"state":"waiting_approval"',
    '{"at":',
    '"step":0,"level":"info","msg":"completed: step 1 is terminal"}]}',
    '"step":1,"level":"info","msg":"completed: step 1"},',
    '{"st":{"state":"completed","updatedAt":',
    ',"current":null,"lastFrom":1,"logSeq":2,"finishedAt":',
    '},"steps":{"1":{"number":1,"status":"completed","visits":1,"attempts":0,"calls":[{"topic":"',
    '","payload":',
    ',"qos":1}],"input":',
    ',"startedAt":',
    ',"endedAt":',
    ',"output":{"topic":"',
    '","state":"completed","current":null,"createdAt":',
    ',"updatedAt":',
    ',"finishedAt":',
    '{"id":"',
    '","sop":"',
    '{"sop":"',
    ',"at":',
    ',"source":"',
    '","outcome":"started","runId":"',
    '","reason":"slot free (',
    ' active)"}',
    '[{"fp":"',
    '","d":{"outcome":"started","runId":"',
    '"}}]',
    'run!',
    'fin!',
    'adm!',
    'mark!',
    ' mqtt hub ',
    '{"head":{"id":"',
    '","mode":"auto","trigger":{"type":"mqtt","source":"',
    '","at":',
    ',"once":{"key":"mqtt hub ',
    '","check":true,"fingerprint":"',
    '"}},"createdAt":',
    ',"admission":"started"},"st":{"state":"pending","updatedAt":',
    ',"current":1,"lastFrom":null,"logSeq":0}}',
  ].join(''),
)

const deflateAsync = promisify(deflateRaw)

/**
 * Up to this many bytes of frames are deflated on the main thread. A lone event's batch (about
 * 1.7 KiB of frames) deflates there in about 16 µs, while handing it to libuv's threads costs
 * two round trips through a sleeping worker, 0.1–0.25 ms of the event's latency on an idle hub
 * (bench/README.md, "peer: a lone event's round trips"). A burst's batches are larger and go to
 * the threads, where their compression runs beside the main thread's work.
 */
export const SEAL_ON_MAIN_BYTES = 16 * 1024

/** A batch's frames (`encodeBatch`) as one deflated frame; a large batch compressed off the main thread. */
export async function sealBatch(frames: Buffer): Promise<Buffer> {
  const opts = { level: 6, dictionary: DICTIONARY }
  const packed =
    frames.length <= SEAL_ON_MAIN_BYTES ? deflateRawSync(frames, opts) : await deflateAsync(frames, opts)
  const bodyLen = MIN_BODY + packed.length
  const out = Buffer.allocUnsafe(HEADER + bodyLen)
  out.writeUInt32LE(bodyLen, 0)
  out[HEADER] = KIND_DEFLATED
  out.writeUInt32LE(0, HEADER + 1)
  packed.copy(out, HEADER + MIN_BODY)
  out.writeUInt32LE(crc32(out.subarray(HEADER)), 4)
  return out
}

function inflate(body: Buffer): Buffer {
  return inflateRawSync(body.subarray(MIN_BODY), { dictionary: DICTIONARY })
}

/** The frames inside a deflated frame (whole, header and body), or the frame itself if it is not one. */
export function unseal(frame: Buffer): Buffer {
  const body = checkedBody(frame, 0)
  if (body === null) throw new Error('not a whole frame with a matching checksum')
  return body[0] === KIND_DEFLATED ? inflate(body) : frame
}
