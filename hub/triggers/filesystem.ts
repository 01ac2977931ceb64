// Filesystem triggers: a recursive fs.watch on the fixed base of each glob, filtered by the
// glob (picomatch) and the change kinds. Changes to one path within the debounce window are
// folded into one event (editors write a file in several steps). fs.watch cannot pair a
// rename's two halves, so its 'rename' is reported as `created` or `deleted` (by whether the
// path exists afterwards), and a trigger listing `renamed` matches both.
import { statSync, watch, type FSWatcher } from 'node:fs'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { FsEvent } from '../../sops/types.ts'
import type { Log } from '../log.ts'
import type { Firer } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { errorText } from '../../errors/text.ts'

export interface FilesystemOptions {
  debounceMs: number
  now?: () => number
}

export interface FsChange {
  path: string
  event: FsEvent
  /** True when the OS reported a rename (so `renamed` triggers match too). */
  rename: boolean
}

/** Does a trigger with these `events` (empty = all) want this change? */
export function wantsChange(events: readonly FsEvent[], change: FsChange): boolean {
  if (events.length === 0) return true
  if (events.includes(change.event)) return true
  return change.rename && events.includes('renamed')
}

export interface FilesystemSource {
  setPlan(plan: TriggerPlan): Promise<void>
  stop(): Promise<void>
}

export function createFilesystemSource(firer: Firer, log: Log, opts: FilesystemOptions): FilesystemSource {
  const now = opts.now ?? Date.now
  let plan: TriggerPlan | undefined
  const watchers = new Map<string, FSWatcher>()
  const pending = new Map<string, { timer: NodeJS.Timeout; kind: 'rename' | 'change' }>()
  const known = new Set<string>()

  const emit = async (abs: string, kind: 'rename' | 'change'): Promise<void> => {
    let exists = true
    try {
      await stat(abs)
    } catch {
      exists = false
    }
    // 'change' on an existing file is a modification; a 'rename' that leaves the path existing
    // is a creation unless this hub already saw the file (an editor's atomic save).
    const event: FsEvent = !exists ? 'deleted' : kind === 'change' || known.has(abs) ? 'modified' : 'created'
    if (exists) known.add(abs)
    else known.delete(abs)
    const change: FsChange = { path: abs, event, rename: kind === 'rename' }
    const text = JSON.stringify(change)
    const fired = new Set<string>()
    for (const f of plan?.filesystem ?? []) {
      if (fired.has(f.sop)) continue
      if (!f.isMatch(abs)) continue
      if (!wantsChange(f.trigger.events, change)) continue
      if (!firer.matches(f.trigger.condition, text)) continue
      fired.add(f.sop)
      await firer.fire(f.sop, { type: 'filesystem', source: abs, payload: { path: abs, event }, at: now() })
    }
  }

  const onChange = (dir: string, kind: 'rename' | 'change', name: string | null): void => {
    if (!name) return
    const abs = join(dir, name)
    const prev = pending.get(abs)
    if (prev) clearTimeout(prev.timer)
    // A rename seen in the window wins over later 'change' events: it decides created/deleted.
    const merged: 'rename' | 'change' = prev?.kind === 'rename' ? 'rename' : kind
    const timer = setTimeout(() => {
      pending.delete(abs)
      emit(abs, merged).catch((err: unknown) =>
        log.error({ path: abs, err: errorText(err) }, 'filesystem trigger failed'),
      )
    }, opts.debounceMs)
    pending.set(abs, { timer, kind: merged })
  }

  return {
    async setPlan(next) {
      plan = next
      const bases = new Set(next.filesystem.map((f) => f.base))
      for (const [dir, w] of watchers) {
        if (!bases.has(dir)) {
          w.close()
          watchers.delete(dir)
        }
      }
      for (const dir of bases) {
        if (watchers.has(dir)) continue
        try {
          // Node 20 throws for a missing folder; Node 22+ on Linux watches nothing and says
          // nothing. Check first, so a SOP author hears about it on every Node.
          if (!statSync(dir).isDirectory()) throw new Error(`ENOTDIR: not a directory: ${dir}`)
          const w = watch(dir, { recursive: true }, (kind, name) =>
            onChange(dir, kind, name === null ? null : String(name)),
          )
          w.on('error', (err) => log.error({ dir, err: errorText(err) }, 'filesystem watch failed'))
          watchers.set(dir, w)
        } catch (err) {
          // A missing folder is a SOP author's mistake, not a reason to stop the hub.
          log.error(
            { dir, err: errorText(err) },
            'filesystem trigger cannot watch this folder; its triggers are inert',
          )
        }
      }
    },
    async stop() {
      for (const w of watchers.values()) w.close()
      watchers.clear()
      for (const p of pending.values()) clearTimeout(p.timer)
      pending.clear()
    },
  }
}
