// What the SOPs page shows about loading: each loaded SOP's own warnings, and the SOP folders
// that did not load, with every diagnostic as `file:line: message` (sops/parse.ts
// formatDiagnostic; hub/DESIGN.md, "Errors and bad input"). Pure.
import { dirname, isAbsolute, relative } from 'node:path'
import type { Diagnostic, Sop } from '../../../sops/types.ts'

export interface NotLoaded {
  /** The SOP folder the diagnostics are about (or the file's folder for a stray file). */
  dir: string
  diagnostics: Diagnostic[]
}

export interface SopDiagnostics {
  /** Diagnostics (warnings: a SOP with errors is not loaded) of each loaded SOP, by name. */
  bySop: Map<string, Diagnostic[]>
  notLoaded: NotLoaded[]
}

export function groupDiagnostics(sops: readonly Sop[], diagnostics: readonly Diagnostic[]): SopDiagnostics {
  const owner = new Map<string, string>()
  for (const s of sops) {
    owner.set(s.tomlPath, s.name)
    owner.set(s.mdPath, s.name)
  }
  const bySop = new Map<string, Diagnostic[]>(sops.map((s) => [s.name, []]))
  const dirs = new Map<string, Diagnostic[]>()
  for (const d of diagnostics) {
    const name = owner.get(d.file)
    if (name !== undefined) bySop.get(name)!.push(d)
    else {
      const dir = dirname(d.file)
      dirs.set(dir, [...(dirs.get(dir) ?? []), d])
    }
  }
  const notLoaded = [...dirs]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([dir, list]) => ({ dir, diagnostics: list }))
  return { bySop, notLoaded }
}

/** A path as short as it can be said: relative to the SOPs folder when inside it. */
export function shortPath(file: string, sopsDir: string): string {
  const r = relative(sopsDir, file)
  return r !== '' && !r.startsWith('..') && !isAbsolute(r) ? r : file
}
