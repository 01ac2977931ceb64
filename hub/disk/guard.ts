// The disk guard: watches free space on the data folder and on each store's folder, and keeps the
// hub from taking work it could not record. The decisions are state.ts's; this file reads the
// disk (statfs, on a timer and before an admission when the last reading is old and near the
// line), writes the one log line per change, reopens the stores that failed, and tells whoever
// waits (held MQTT publishes, admissions to retry) when work goes on.
import { statfs as fsStatfs } from 'node:fs/promises'
import type { Log } from '../log.ts'
import { errorText } from '../../errors/text.ts'
import { registerRefuser } from './refusing.ts'
import { nearLine, type ReserveSetting, reserveBytes, resumeAt } from './reserve.ts'
import {
  type DiskAction,
  type DiskEvent,
  type DiskState,
  initialState,
  type Reading,
  step,
  worstReading,
} from './state.ts'
import { causeText, type DiskView, diskView, refuseMessage, resumeMessage } from './view.ts'

/** A store the guard reopens once there is room after one of its writes failed. */
export interface GuardedStore {
  /** How the log and the status name it: `engine`, `broker`, `attest`. */
  name: string
  /** Its folder: watched beside the data folder (it may be on another device). */
  path: string
  /** Closes and opens the database again, recovering what it holds as a restart would. */
  reopen(): Promise<void>
}

/** Free and total bytes of the filesystem holding `path` (statfs). */
export type SpaceOf = (path: string) => Promise<{ free: number; size: number }>

export interface DiskGuardOptions {
  dataDir: string
  reserve: ReserveSetting
  log: Log
  /** Injected by tests; default statfs (`bavail`: what a process that is not root may write). */
  spaceOf?: SpaceOf
  now?: () => number
  /** Time between readings far from the line (default 2 s) and near it (default 250 ms). */
  intervalMs?: number
  nearIntervalMs?: number
}

export interface DiskGuard {
  /**
   * Null when new work may be taken; else why not. When the last reading is older than
   * FRESH_MS and near the line, the disk is read first (then a promise).
   */
  refusal(): string | null | Promise<string | null>
  refusing(): boolean
  /** Resolves once work is taken again (at once while it is). */
  room(): Promise<void>
  /** A store's write failed for want of disk (or an I/O error): refuse, and reopen it once there is room. */
  writeFailed(store: string, err: unknown): void
  addStore(store: GuardedStore): void
  /** How many events are held unacknowledged for room (the embedded broker's), for the view. */
  countHeld(fn: () => number): void
  /** Called when the guard starts or stops refusing, or the stores waiting to reopen change. */
  onChange(fn: (v: DiskView) => void): () => void
  view(): DiskView
  /** Reads the disk now (the first reading, and tests). */
  read(): Promise<void>
  /** Reads once and starts the timer. */
  start(): Promise<void>
  stop(): void
}

/** How old a reading near the line may be when an admission asks. */
export const FRESH_MS = 100

export const defaultSpaceOf: SpaceOf = async (path) => {
  const s = await fsStatfs(path)
  return { free: s.bavail * s.bsize, size: s.blocks * s.bsize }
}

export function createDiskGuard(o: DiskGuardOptions): DiskGuard {
  const now = o.now ?? Date.now
  const spaceOf = o.spaceOf ?? defaultSpaceOf
  const far = o.intervalMs ?? 2000
  const near = o.nearIntervalMs ?? 250
  const stores = new Map<string, GuardedStore>()
  const listeners = new Set<(v: DiskView) => void>()
  let waiters: (() => void)[] = []
  let state: DiskState = initialState(now())
  let lastRead = Number.NEGATIVE_INFINITY
  let reading: Promise<void> | null = null
  let timer: NodeJS.Timeout | null = null
  let stopped = false
  let unregister: (() => void) | null = null
  // A reopen that fails is said once per episode; later attempts at debug.
  let reopenWarned = false
  let held: (() => number) | null = null

  const paths = (): string[] => [...new Set([o.dataDir, ...[...stores.values()].map((s) => s.path)])]

  const changed = (): void => {
    const v = diskView(state)
    for (const fn of listeners) {
      try {
        fn(v)
      } catch (err) {
        o.log.error({ err: errorText(err) }, 'disk guard listener failed')
      }
    }
  }

  const apply = (e: DiskEvent): void => {
    const before = state
    const r = step(state, e)
    state = r.state
    for (const a of r.actions) act(a)
    if (before.mode !== state.mode || before.failed.length !== state.failed.length) changed()
    if (state.mode === 'ok' && waiters.length > 0) {
      const w = waiters
      waiters = []
      for (const fn of w) fn()
    }
  }

  const act = (a: DiskAction): void => {
    switch (a.kind) {
      case 'refuse': {
        reopenWarned = false
        const say = (r: Reading | null): void =>
          o.log.warn(
            {
              path: r?.path ?? null,
              free_bytes: r?.free ?? null,
              reserve_bytes: r?.reserve ?? null,
              cause: causeText(a.cause),
            },
            refuseMessage(a.cause, r, a.again),
          )
        // A failed write comes between readings: the line gives the space as it is now.
        if (a.cause.kind === 'reserve') say(a.reading)
        else void read().finally(() => say(worstReading(state.readings)))
        return
      }
      case 'resume':
        o.log.info(
          { path: a.reading?.path ?? null, free_bytes: a.reading?.free ?? null, refused_ms: a.refusedMs },
          resumeMessage(a.refusedMs, a.reading),
        )
        return
      case 'reopen':
        void reopen(a.stores)
        return
      case 'reopen-failed': {
        const entry = { failed: a.failed, retry_in_ms: a.retryInMs }
        if (reopenWarned) o.log.debug?.(entry, 'disk: a store did not open again; retrying')
        else o.log.warn(entry, 'disk: a store did not open again; retrying while there is room')
        reopenWarned = true
        return
      }
    }
  }

  const reopen = async (names: string[]): Promise<void> => {
    const failed: { store: string; error: string }[] = []
    for (const name of names) {
      const s = stores.get(name)
      if (!s) continue
      try {
        await s.reopen()
        o.log.info({ store: name, path: s.path }, `disk: the ${name} store is open again`)
      } catch (err) {
        failed.push({ store: name, error: errorText(err) })
      }
    }
    if (!stopped) apply({ kind: 'reopened', at: now(), stores: names, failed })
  }

  const read = (): Promise<void> => {
    reading ??= (async () => {
      try {
        const readings: Reading[] = []
        for (const path of paths()) {
          try {
            const { free, size } = await spaceOf(path)
            readings.push({ path, free, size, reserve: reserveBytes(o.reserve, size) })
          } catch (err) {
            // A folder not made yet (a store opened later) has nothing to say.
            o.log.debug?.({ path, err: errorText(err) }, 'disk: cannot read free space')
          }
        }
        lastRead = now()
        if (!stopped && readings.length > 0) apply({ kind: 'read', at: lastRead, readings })
      } finally {
        reading = null
      }
    })()
    return reading
  }

  const isNear = (): boolean => {
    const w = worstReading(state.readings)
    return w !== null && nearLine(w.free, w.reserve)
  }

  const schedule = (ms: number): void => {
    if (stopped) return
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => {
      timer = null
      void read().finally(() => schedule(state.mode === 'refusing' || isNear() ? near : far))
    }, ms)
    timer.unref()
  }

  const reason = (): string | null =>
    state.mode === 'refusing' && state.cause ? causeText(state.cause) : null

  const guard: DiskGuard = {
    refusal() {
      if (state.mode === 'refusing') return reason() ?? 'the disk is full'
      if (now() - lastRead <= FRESH_MS || !isNear()) return null
      return read().then(reason)
    },
    refusing: () => state.mode === 'refusing',
    room() {
      if (state.mode === 'ok') return Promise.resolve()
      return new Promise<void>((resolve) => waiters.push(resolve))
    },
    writeFailed(store, err) {
      apply({ kind: 'write-failed', at: now(), store, error: errorText(err) })
      // Read again soon: the space may already be back (another program's file removed).
      if (timer !== null) schedule(near)
    },
    addStore(s) {
      stores.set(s.name, s)
    },
    countHeld(fn) {
      held = fn
    },
    onChange(fn) {
      listeners.add(fn)
      return () => {
        listeners.delete(fn)
      }
    },
    view: () => {
      const v = diskView(state)
      const n = held?.() ?? 0
      return n > 0 ? { ...v, held_events: n } : v
    },
    read,
    async start() {
      // For the watchdog: refusing for want of disk, which a restart would not cure. A store that
      // failed and will not reopen with room on the disk is not that: a restart may cure it.
      unregister = registerRefuser({
        refusing: () => state.mode === 'refusing' && state.readings.some((r) => r.free < resumeAt(r.reserve)),
        failed: () => state.failed,
      })
      await read()
      schedule(state.mode === 'refusing' || isNear() ? near : far)
    },
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = null
      unregister?.()
      // Whoever waits for room keeps waiting: at shutdown their work was never acknowledged, and
      // its publisher (or the external broker) sends it again to the next start.
    },
  }
  return guard
}
