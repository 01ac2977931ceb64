// A SOP from the text of its two files. Pure: the loader (load.ts) reads the files and calls this.
import { parseStepsMarkdown } from './md-steps.ts'
import { parseSopToml } from './toml-sop.ts'
import type { Diagnostic, Sop } from './types.ts'
import { validateSop } from './validate.ts'

export interface SopSource {
  dir: string
  tomlPath: string
  tomlText: string
  mdPath: string
  mdText: string
  package?: string
}

export interface ParsedSop {
  /** The SOP as parsed, even when it has errors (for `show` and for duplicate-name checks). */
  sop: Sop
  /** Line of `name =` in SOP.toml (for duplicate-name errors). */
  nameLine: number
  /** Whether `name` was read; a SOP without a name is never returned as loaded. */
  named: boolean
  diagnostics: Diagnostic[]
}

export function parseSop(src: SopSource): ParsedSop {
  const toml = parseSopToml(src.tomlText, src.tomlPath)
  const md = parseStepsMarkdown(src.mdText, src.mdPath)
  const s = toml.settings
  const sop: Sop = {
    name: s.name ?? '',
    description: s.description ?? '',
    priority: s.priority,
    executionMode: s.executionMode,
    cooldownSecs: s.cooldownSecs,
    maxConcurrent: s.maxConcurrent,
    admissionPolicy: s.admissionPolicy,
    triggers: toml.triggers,
    steps: md.steps,
    dir: src.dir,
    tomlPath: src.tomlPath,
    mdPath: src.mdPath,
  }
  if (s.version !== undefined) sop.version = s.version
  if (s.agent !== undefined) sop.agent = s.agent
  if (src.package !== undefined) sop.package = src.package
  const checks = validateSop(
    sop,
    { sop: toml.lines.sop, ...(toml.lines.agent ? { agent: toml.lines.agent } : {}) },
    toml.triggerTypes,
  )
  const diagnostics = [...toml.diagnostics, ...md.diagnostics, ...checks]
  return {
    sop,
    nameLine: toml.lines.name,
    named: s.name !== undefined && s.name !== '',
    diagnostics: sortDiagnostics(diagnostics),
  }
}

export function sortDiagnostics(list: Diagnostic[]): Diagnostic[] {
  return [...list].sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1))
}

export function hasErrors(list: readonly Diagnostic[]): boolean {
  return list.some((d) => d.severity === 'error')
}

/** `file:line: message`, with `warning:` before warnings. */
export function formatDiagnostic(d: Diagnostic): string {
  return `${d.file}:${d.line}: ${d.severity === 'warning' ? 'warning: ' : ''}${d.message}`
}
