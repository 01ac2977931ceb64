// The engine store's keys in LevelDB (hub/engine/README.md, "The history log"): the prefixes,
// the markers of its layout and of how far it has read the log, which values live in the log
// and the locators LevelDB holds for them. Every part of the store reads its keys from here, and
// so does a restore that counts the runs an archive holds (`archivedRun`), so the layout is
// written down once.
import type { Locator } from './log/segment-log.ts'
import type { BatchOp } from './group-commit.ts'
import type { StagedOp } from './staged.ts'

/** A run's records, one key each (`run!<id>!<n>`); its summary once finished. */
export const RUN = 'run!'
/** Marks an unfinished run, so a restart finds it without reading the history. */
export const OPEN = 'open!'
export const FIN = 'fin!'
/** A trigger kept for later (sops/RUNTIME.md, "Kept triggers"). */
export const KEPT = 'kept!'
/** Admission records, by time: in the history log alone (`logOnly`). */
export const ADM = 'adm!'
/** When each SOP last finished a run: its cooldown counts from there (sops/RUNTIME.md, "Cooldown"). */
export const LAST = 'last!'
/** Once-only admission marks (engine-api: `TriggerEvent.once`), and the same keys by time for pruning. */
export const ONCE = 'once!'
export const ONCE_AT = 'onceat!'
/** Fingerprinted once-only marks (`once.fingerprint`): the few latest per key, deleted when forgotten. */
export const MARK = 'mark!'
/** How far into the history log LevelDB has applied: `<segment>:<offset>`. */
export const APPLIED = 'meta!applied'
/**
 * The layout (hub/stores/format.ts): '2' once run records live in the log (a store without it is
 * migrated on open); '3' once the log's batches may be followed by zeroes to their page's end
 * (segment-log.ts `append`), which the code of layout 2 would take for the log's end; '4' once a
 * finished run may be located by the run index alone (store-writes.ts `indexOwn`), which the
 * code of layout 3 would not find.
 */
export const LAYOUT = 'meta!layout'
export const LAYOUT_VERSION = '4'
/** When a full segment was last written (`meta!segtime!<n>`, base 36): the age retention judges. */
export const SEGTIME = 'meta!segtime!'
/** The last segment retention dropped (written with the sync that comes before the drop). */
export const DROPPED = 'meta!dropped'
/** The key suffix of a run's first record (`deltaKey(id, 0)`), which carries its head. */
export const FIRST = '!000000'

/**
 * Keys whose values live in the log; LevelDB holds a locator (`@seg.off.len`, base 36): the run
 * records, the finished runs' summaries, the fingerprinted once-only marks (rewritten with every
 * MQTT event, up to four a key). What LevelDB then writes and compacts is keys and locators, a
 * tenth of the bytes.
 */
export const inLog = (key: string) => key.startsWith(RUN) || key.startsWith(FIN) || key.startsWith(MARK)

/**
 * Keys the log holds and LevelDB never does: the admission records, one with every trigger.
 * They are read only newest first (`HubEngine.admissions`) or all at once (a backup), both in
 * the log's own order (store-reads.ts `loggedAdmissions`), and they go with their segment. A key
 * and locator each in LevelDB, put and later deleted, cost a burst about a quarter of its bytes
 * (hub/engine/README.md, "The write budget").
 */
export const logOnly = (key: string) => key.startsWith(ADM)

/** An operation as LevelDB takes it: a value that lives in the log becomes its locator. */
export function indexOp(op: BatchOp, locator: () => string): StagedOp {
  if (op.type === 'del') return { type: 'del', key: op.key }
  const value = inLog(op.key) ? locator() : op.value
  return op.fresh ? { type: 'put', key: op.key, value, fresh: true } : { type: 'put', key: op.key, value }
}

/** `@seg.off.len` of a frame, and `.off.len` of the record inside it when it is a deflated batch. */
export function locatorText(
  seg: number,
  off: number,
  len: number,
  inner?: { off: number; len: number },
): string {
  const at = `@${seg.toString(36)}.${off.toString(36)}.${len.toString(36)}`
  return inner ? `${at}.${inner.off.toString(36)}.${inner.len.toString(36)}` : at
}

export function parseLocator(v: string): Locator & { inner?: { off: number; len: number } } {
  const [seg, off, len, ioff, ilen] = v
    .slice(1)
    .split('.')
    .map((n) => Number.parseInt(n, 36))
  const loc = { seg: seg!, off: off!, len: len! }
  return ioff === undefined ? loc : { ...loc, inner: { off: ioff, len: ilen! } }
}

/** Sortable fixed-width counter so keys iterate in arrival order. */
export function seqKey(prefix: string, at: number, seq: number): string {
  return `${prefix}${at.toString(36).padStart(10, '0')}!${seq.toString(36).padStart(8, '0')}`
}

export const deltaKey = (id: string, seq: number) => `${RUN}${id}!${seq.toString(36).padStart(6, '0')}`

/**
 * Which run an engine entry of a backup archive stands for, by its key as the archive carries
 * it (hub/backup/restore.ts counts them): a finished run's summary, an unfinished run's marker,
 * or neither. An archive holds the store's first layout (`exportRecords`), whose keys these are.
 */
export function archivedRun(key: Buffer): 'finished' | 'unfinished' | undefined {
  const head = key.toString('utf8', 0, OPEN.length)
  if (head.startsWith(FIN)) return 'finished'
  if (head === OPEN) return 'unfinished'
  return undefined
}
