// The two ways a write meets a full disk, as values the event path can tell apart from other
// failures: the hub refused the work before writing (DiskRefusal), or a store's write failed
// (LevelDB's LEVEL_IO_ERROR: ENOSPC and its kin). Either way the work was not recorded, and the
// source keeps it (no PUBACK) until there is room. Pure.
import { codeOf } from '../../errors/text.ts'

export const DISK_REFUSING = 'SVC_DISK_REFUSING'

/** New work refused because the disk is below its reserve (or a store failed and waits for room). */
export class DiskRefusal extends Error {
  readonly code = DISK_REFUSING
  constructor(reason: string) {
    super(`the hub is refusing new work: ${reason}`)
    this.name = 'DiskRefusal'
  }
}

/** LevelDB could not write its files (a full disk, an I/O error): the store must be reopened. */
export function isStoreIoError(err: unknown): boolean {
  return codeOf(err) === 'LEVEL_IO_ERROR'
}

/** Not recorded for want of disk: refused before the write, or the write failed. */
export function isDiskError(err: unknown): boolean {
  return codeOf(err) === DISK_REFUSING || isStoreIoError(err)
}
