// The SOPs the hub serves, loaded from the sops dir at the start and again on a reload (SIGHUP),
// every problem logged with its file and line.
import { mkdir } from 'node:fs/promises'
import { loadSops } from '../../../sops/load.ts'
import type { Diagnostic, Sop } from '../../../sops/types.ts'
import type { Log } from '../../log.ts'

/** The SOPs loaded now; a reload replaces both fields, and the hub's parts read them through it. */
export interface LoadedSops {
  sops: Sop[]
  diagnostics: Diagnostic[]
}

export function logDiagnostics(log: Log, diagnostics: readonly Diagnostic[]): void {
  for (const d of diagnostics) {
    const where = { file: d.file, line: d.line }
    if (d.severity === 'error') log.error(where, `SOP not loaded: ${d.file}:${d.line}: ${d.message}`)
    else log.warn(where, `${d.file}:${d.line}: ${d.message}`)
  }
}

export async function loadAndReport(dir: string, log: Log): Promise<LoadedSops> {
  await mkdir(dir, { recursive: true })
  const loaded = await loadSops(dir)
  logDiagnostics(log, loaded.diagnostics)
  log.info(
    {
      dir,
      loaded: loaded.sops.map((s) => s.name),
      errors: loaded.diagnostics.filter((d) => d.severity === 'error').length,
    },
    'SOPs loaded',
  )
  return loaded
}

/** Files whose SOP did not load. */
export function invalidCount(diagnostics: readonly Diagnostic[]): number {
  return new Set(diagnostics.filter((d) => d.severity === 'error').map((d) => d.file)).size
}
