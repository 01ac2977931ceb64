// Which versions of the board line protocol this bridge speaks, and the firmware identity a board
// names in its hello: `"fw":"<name>/<version>"` and `"proto":<n>` (bridge/README.md, "The board
// line protocol"). Pure, and free of typebox, so the CLI and the console can read it cheaply.

/** The line protocol versions this bridge speaks. A board speaking another is warned about and used as far as it goes. */
export const SUPPORTED_PROTOCOLS: readonly number[] = [1]

/** A hello without `proto`: the boards in the field before the hello carried one spoke protocol 1. */
export const DEFAULT_PROTOCOL = 1

/** `proto` is a small integer (one byte on the board). */
export const PROTO_MIN = 1
export const PROTO_MAX = 255

/** What names and versions may hold: the firmware checks the same set at compile time (svc_identity.h). */
export const FW_PART_RE = /^[A-Za-z0-9._+-]{1,31}$/

export function isProtocol(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= PROTO_MIN && v <= PROTO_MAX
}

export function speaksProtocol(proto: number): boolean {
  return SUPPORTED_PROTOCOLS.includes(proto)
}

/**
 * `svc-companion/0.2.0` → `{ name: 'svc-companion', version: '0.2.0' }`; undefined for any other
 * shape (a hand-written sketch may name its firmware freely: the hub then knows no version).
 */
export function splitFirmware(fw: string): { name: string; version: string } | undefined {
  const slash = fw.indexOf('/')
  if (slash < 0) return undefined
  const name = fw.slice(0, slash)
  const version = fw.slice(slash + 1)
  return FW_PART_RE.test(name) && FW_PART_RE.test(version) ? { name, version } : undefined
}
