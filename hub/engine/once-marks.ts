// The engine's fingerprinted once-only marks in memory (engine-api: `once.fingerprint`), each
// key's few latest as the JSON the store writes for it (store.ts `markOp`), one string per key.
// The MQTT intake keeps every admitted message's mark until FORGET_AFTER_MS after its PUBACK
// (hub/triggers/intake.ts), so a hub taking thousands of events a second holds a hundred
// thousand of them at any moment. As objects (an array per key, the mark, its decision, the run
// id and the reason built by concatenation) each cost about 450 bytes of heap, most of what a
// busy hub kept alive; as one string 310, of which about 95 were the parts JSON.stringify built
// it from; as one flat string (hub/memory/flat.ts), 215. A look-up parses a key's string only
// when the fingerprint is in it, which for a message seen for the first time it is not.
import type { AdmissionDecision } from '../../sops/engine-api.ts'
import type { OnceMark } from './store-types.ts'
import { flat } from '../memory/flat.ts'

/** Fingerprinted marks kept under one key: a broker may have two events in flight under one key. */
export const MAX_MARKS_PER_KEY = 4

/** The store's key for a SOP's once-only key (exported as `onceKey`). */
const joined = (sop: string, key: string): string => `${sop}\u0000${key}`

export class OnceMarks {
  /**
   * By SOP, then by the event's own key (the source's string, which its forget queue holds too):
   * a key joined with the SOP's name would be a string of its own per event.
   */
  private readonly bySop = new Map<string, Map<string, string>>()

  /** From the store (`EngineStore.marks`), whose keys join the SOP and the key with a NUL. */
  constructor(stored?: Iterable<readonly [string, readonly OnceMark[]]>) {
    if (stored) for (const [k, list] of stored) this.set(...split(k), list)
  }

  /** Keys that hold marks. */
  get size(): number {
    let n = 0
    for (const m of this.bySop.values()) n += m.size
    return n
  }

  /** The decision `fp` was admitted with under the SOP's `key`, while its mark is kept. */
  decision(sop: string, key: string, fp: string): AdmissionDecision | undefined {
    const json = this.bySop.get(sop)?.get(key)
    if (json === undefined || !json.includes(JSON.stringify(fp))) return undefined
    return this.list(sop, key).find((m) => m.fp === fp)?.d
  }

  /** The marks kept under the SOP's `key`, oldest first (a fresh array each time). */
  list(sop: string, key: string): OnceMark[] {
    const json = this.bySop.get(sop)?.get(key)
    return json === undefined ? [] : (JSON.parse(json) as OnceMark[])
  }

  /** What `key` would hold once `fp` is admitted with `d`: the latest MAX_MARKS_PER_KEY. Changes nothing. */
  with(sop: string, key: string, fp: string, d: AdmissionDecision): OnceMark[] {
    const kept = this.list(sop, key).filter((m) => m.fp !== fp)
    kept.push({ fp, d })
    return kept.slice(-MAX_MARKS_PER_KEY)
  }

  set(sop: string, key: string, list: readonly OnceMark[]): void {
    let keys = this.bySop.get(sop)
    if (list.length === 0) {
      keys?.delete(key)
      if (keys?.size === 0) this.bySop.delete(sop)
      return
    }
    if (!keys) this.bySop.set(sop, (keys = new Map()))
    keys.set(key, flat(JSON.stringify(list.slice(-MAX_MARKS_PER_KEY))))
  }

  /** Drops `fp`'s mark under the SOP's `key`; the marks left, or null when it held none. */
  forget(sop: string, key: string, fp: string): OnceMark[] | null {
    const json = this.bySop.get(sop)?.get(key)
    if (json === undefined || !json.includes(JSON.stringify(fp))) return null
    const list = this.list(sop, key)
    const left = list.filter((m) => m.fp !== fp)
    if (left.length === list.length) return null
    this.set(sop, key, left)
    return left
  }

  /** Takes in marks read back from the store (a reopen): those not held go before those held. */
  merge(storeKey: string, stored: readonly OnceMark[]): void {
    const [sop, key] = split(storeKey)
    const held = this.list(sop, key)
    const more = stored.filter((m) => !held.some((h) => h.fp === m.fp))
    if (more.length > 0) this.set(sop, key, [...more, ...held])
  }
}

function split(storeKey: string): [string, string] {
  const at = storeKey.indexOf('\u0000')
  return [storeKey.slice(0, at), storeKey.slice(at + 1)]
}

export { joined as onceKey }
