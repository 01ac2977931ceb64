// Which firmware an image holds, read from its bytes before it is written to a board. The
// companion firmware keeps its identity in flash as the literal `svc-fw:<name>/<version>;proto=<n>`
// and a NUL (boards/firmware/svc_companion/src/svc_identity.h, which prints its hello from the
// same bytes); this finds that marker. Pure: bytes in (an image from address 0, e.g. what
// intel-hex.ts parses), identity out; no file or process is touched here.
import { PROTO_MAX, PROTO_MIN } from '../codec/protocol.ts'

export const IDENTITY_PREFIX = 'svc-fw:'

export interface ImageIdentity {
  /** The firmware's name, e.g. `svc-companion`. */
  name: string
  /** Its version, e.g. `0.2.0`. */
  version: string
  /** The line protocol it speaks. */
  proto: number
}

const PREFIX = new TextEncoder().encode(IDENTITY_PREFIX)
// The firmware allows 1 to 31 of these in the name and in the version (codec/protocol.ts
// FW_PART_RE), and a protocol from 1 to 255 without a leading zero.
const MARKER = /^([A-Za-z0-9._+-]{1,31})\/([A-Za-z0-9._+-]{1,31});proto=([1-9][0-9]{0,2})$/
/** The longest marker body after the prefix: name/version;proto=NNN. */
const BODY_MAX = 31 + 1 + 31 + ';proto='.length + 3

/**
 * Every well-formed identity marker in the image, in the order they appear. A marker is the
 * prefix, a body of the allowed characters, and a NUL within BODY_MAX bytes; anything else (cut
 * off by the end of the image, junk after the protocol, a protocol out of range) is not one.
 */
export function imageIdentities(bytes: Uint8Array): ImageIdentity[] {
  const found: ImageIdentity[] = []
  const first = PREFIX[0]!
  for (let i = bytes.indexOf(first); i >= 0; i = bytes.indexOf(first, i + 1)) {
    if (!startsWithPrefix(bytes, i)) continue
    const start = i + PREFIX.length
    // Looked for within the longest body only: an image full of prefixes without a NUL stays linear.
    const body = bytes.subarray(start, start + BODY_MAX + 1)
    const end = body.indexOf(0)
    if (end < 0) continue
    // One character per byte, so a stray high byte cannot pass as an allowed character.
    const m = MARKER.exec(String.fromCharCode(...body.subarray(0, end)))
    if (!m) continue
    const proto = Number(m[3])
    if (proto < PROTO_MIN || proto > PROTO_MAX) continue
    found.push({ name: m[1]!, version: m[2]!, proto })
  }
  return found
}

/**
 * The image's identity, or undefined when it carries none, or more than one that disagree (an
 * image that names two firmwares says nothing reliable about either).
 */
export function imageIdentity(bytes: Uint8Array): ImageIdentity | undefined {
  const all = imageIdentities(bytes)
  const one = all[0]
  if (!one) return undefined
  const same = all.every((x) => x.name === one.name && x.version === one.version && x.proto === one.proto)
  return same ? one : undefined
}

function startsWithPrefix(bytes: Uint8Array, at: number): boolean {
  if (at + PREFIX.length > bytes.length) return false
  for (let k = 0; k < PREFIX.length; k++) if (bytes[at + k] !== PREFIX[k]) return false
  return true
}

const VERSION_RE = /^(\d+(?:\.\d+)*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]*)?$/

/**
 * Orders two dotted versions: -1 when `a` is older, 1 when newer, 0 when the same; undefined
 * when either is not a version (then nothing can be said, and a caller must not guess).
 * Parts compare as numbers (`0.10.0` is newer than `0.9.1`), missing parts are 0 (`1.0` = `1.0.0`),
 * a pre-release is older than its release (`1.0.0-rc.1` < `1.0.0`, its parts as in semver), and
 * build metadata after `+` is ignored.
 */
export function compareVersions(a: string, b: string): -1 | 0 | 1 | undefined {
  const x = VERSION_RE.exec(a)
  const y = VERSION_RE.exec(b)
  if (!x || !y) return undefined
  const xs = x[1]!.split('.')
  const ys = y[1]!.split('.')
  for (let i = 0; i < Math.max(xs.length, ys.length); i++) {
    const c = compareDigits(xs[i] ?? '0', ys[i] ?? '0')
    if (c !== 0) return c
  }
  const xp = x[2]
  const yp = y[2]
  if (xp === undefined || yp === undefined) return xp === yp ? 0 : xp === undefined ? 1 : -1
  const xi = xp.split('.')
  const yi = yp.split('.')
  for (let i = 0; i < Math.min(xi.length, yi.length); i++) {
    const p = xi[i]!
    const q = yi[i]!
    const pn = /^\d+$/.test(p)
    const qn = /^\d+$/.test(q)
    const c = pn && qn ? compareDigits(p, q) : pn ? -1 : qn ? 1 : p < q ? -1 : p > q ? 1 : 0
    if (c !== 0) return c
  }
  return sign(xi.length - yi.length)
}

/** Two strings of digits as numbers of any size (no rounding past 2^53). */
function compareDigits(p: string, q: string): -1 | 0 | 1 {
  const a = p.replace(/^0+(?=\d)/, '')
  const b = q.replace(/^0+(?=\d)/, '')
  if (a.length !== b.length) return sign(a.length - b.length)
  return a < b ? -1 : a > b ? 1 : 0
}

function sign(n: number): -1 | 0 | 1 {
  return n < 0 ? -1 : n > 0 ? 1 : 0
}
