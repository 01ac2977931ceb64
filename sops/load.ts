// Reading SOP directories from disk: the only I/O of the SOP format. A SOP directory holds
// SOP.toml and SOP.md; `<sopsDir>/<name>/` is a SOP, `<sopsDir>/<package>/<name>/` is a SOP
// installed by a plugin package (sops/FORMAT.md, "Where SOPs live"). Nothing that fails to load is
// skipped silently (sops/FORMAT.md, "Where SOPs live"): it becomes an error diagnostic.
import { readdir, readFile, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { fail, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import { hasErrors, parseSop, type ParsedSop, sortDiagnostics } from './parse.ts'
import type { Diagnostic, Sop } from './types.ts'

export const SOP_TOML = 'SOP.toml'
export const SOP_MD = 'SOP.md'

export interface LoadedSop {
  sop?: Sop
  diagnostics: Diagnostic[]
}

async function readText(path: string): Promise<Result<{ text: string }>> {
  try {
    // A UTF-8 byte order mark (some editors write one) is not part of the text.
    const text = await readFile(path, 'utf8')
    return { ok: true, text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return fail('NOT_FOUND', 'file is missing')
    if (code === 'EISDIR') return fail('BAD_INPUT', 'is a directory, not a file')
    return fail('IO_FAILED', `cannot read: ${errorText(e)}`)
  }
}

/** Parse one SOP directory without deciding whether it loads (errors are kept with the SOP). */
export async function readSopDir(
  dir: string,
  pkg?: string,
): Promise<{ parsed?: ParsedSop; diagnostics: Diagnostic[] }> {
  const tomlPath = join(dir, SOP_TOML)
  const mdPath = join(dir, SOP_MD)
  const [toml, md] = await Promise.all([readText(tomlPath), readText(mdPath)])
  const missing: Diagnostic[] = []
  if (!toml.ok)
    missing.push({ file: tomlPath, line: 1, message: `${SOP_TOML}: ${toml.error}`, severity: 'error' })
  if (!md.ok) missing.push({ file: mdPath, line: 1, message: `${SOP_MD}: ${md.error}`, severity: 'error' })
  if (!toml.ok || !md.ok) return { diagnostics: missing }
  const parsed = parseSop({
    dir,
    tomlPath,
    tomlText: toml.text,
    mdPath,
    mdText: md.text,
    ...(pkg !== undefined ? { package: pkg } : {}),
  })
  return { parsed, diagnostics: parsed.diagnostics }
}

/** One SOP directory. `sop` is set only when there are no errors. */
export async function loadSop(dir: string): Promise<LoadedSop> {
  const r = await readSopDir(dir)
  return r.parsed && !hasErrors(r.diagnostics)
    ? { sop: r.parsed.sop, diagnostics: r.diagnostics }
    : { diagnostics: r.diagnostics }
}

export async function isDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory()
  } catch {
    return false
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}

async function subdirs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true })
  const byName = new Map(entries.filter((e) => !e.name.startsWith('.')).map((e) => [e.name, e]))
  const names = [...byName.keys()].sort()
  // Symlinks count when they point at a directory (a package linked into the sops dir).
  const flags = await Promise.all(
    names.map(async (n) => {
      const e = byName.get(n)
      return e?.isDirectory() === true || (e?.isSymbolicLink() === true && (await isDir(join(dir, n))))
    }),
  )
  return names.filter((_, i) => flags[i])
}

const looksLikeSop = async (dir: string): Promise<boolean> =>
  (await exists(join(dir, SOP_TOML))) || (await exists(join(dir, SOP_MD)))

export interface FoundDir {
  dir: string
  package?: string
}

/** The SOP directories under `sopsDir`, and located problems with what is there. */
export async function findSopDirs(sopsDir: string): Promise<{ dirs: FoundDir[]; diagnostics: Diagnostic[] }> {
  const dirs: FoundDir[] = []
  const diagnostics: Diagnostic[] = []
  if (!(await isDir(sopsDir))) return { dirs, diagnostics }
  // Stat in parallel, then keep the sorted order (a sops dir may hold thousands of SOPs).
  const found = await Promise.all(
    (await subdirs(sopsDir)).map(async (name): Promise<{ name: string; dirs: FoundDir[] }> => {
      const dir = join(sopsDir, name)
      if (await looksLikeSop(dir)) return { name, dirs: [{ dir }] }
      // A plugin package: `<sopsDir>/<package>/<sop>/`.
      const children = await subdirs(dir)
      const flags = await Promise.all(children.map((c) => looksLikeSop(join(dir, c))))
      return {
        name,
        dirs: children.filter((_, i) => flags[i]).map((c) => ({ dir: join(dir, c), package: name })),
      }
    }),
  )
  for (const f of found) {
    if (f.dirs.length === 0)
      diagnostics.push({
        file: join(sopsDir, f.name),
        line: 1,
        message: `neither a SOP (no ${SOP_TOML} or ${SOP_MD}) nor a package of SOPs; ignored`,
        severity: 'warning',
      })
    dirs.push(...f.dirs)
  }
  return { dirs, diagnostics }
}

export interface LoadAll {
  sops: Sop[]
  diagnostics: Diagnostic[]
  /** Every SOP that parsed far enough to have a name, with its own diagnostics (for the CLI). */
  parsed: ParsedSop[]
}

/** Every SOP under `sopsDir`. Only SOPs without errors are returned; duplicate names are errors naming both files. */
export async function loadAll(sopsDir: string): Promise<LoadAll> {
  const found = await findSopDirs(sopsDir)
  const diagnostics: Diagnostic[] = [...found.diagnostics]
  const parsed: ParsedSop[] = []
  const results = await Promise.all(found.dirs.map((d) => readSopDir(d.dir, d.package)))
  for (const r of results) {
    diagnostics.push(...r.diagnostics)
    if (r.parsed) parsed.push(r.parsed)
  }
  // Duplicate names: every copy is an error (which one is meant cannot be guessed), each naming the others.
  const byName = new Map<string, ParsedSop[]>()
  for (const p of parsed) if (p.named) byName.set(p.sop.name, [...(byName.get(p.sop.name) ?? []), p])
  for (const [name, group] of byName) {
    if (group.length < 2) continue
    for (const p of group) {
      const others = group.filter((o) => o !== p).map((o) => `${o.sop.tomlPath}:${o.nameLine}`)
      const d: Diagnostic = {
        file: p.sop.tomlPath,
        line: p.nameLine,
        message: `duplicate SOP name "${name}" (also in ${others.join(', ')})`,
        severity: 'error',
      }
      diagnostics.push(d)
      p.diagnostics.push(d)
    }
  }
  const sops = parsed.filter((p) => p.named && !hasErrors(p.diagnostics)).map((p) => p.sop)
  return { sops, diagnostics: sortDiagnostics(diagnostics), parsed }
}

export async function loadSops(sopsDir: string): Promise<{ sops: Sop[]; diagnostics: Diagnostic[] }> {
  const { sops, diagnostics } = await loadAll(sopsDir)
  return { sops, diagnostics }
}

/** The SOP directory name, for messages about a SOP that has no name yet. */
export const dirLabel = (dir: string): string => basename(dir)
