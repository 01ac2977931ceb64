// Reading the repository's docs for the docs test: which files are docs and sources, the headings
// of a Markdown file (and their GitHub anchors), and the citations a file makes. A citation is a
// path and a heading, `sops/RUNTIME.md, "Admission"` (the comma may be left out; the path is from
// the repository root, or from the citing file's folder), or a Markdown link or path with an
// anchor, `[Admission](../sops/RUNTIME.md#admission)`.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** Folders never read: installed packages, git, tool output. */
const SKIP = new Set(['node_modules', '.git', 'test-results', 'coverage', 'dist'])

/** Every `.ts` and `.md` file under `root`, as paths relative to it. */
export function repoFiles(root: string, dir = ''): string[] {
  const out: string[] = []
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (SKIP.has(e.name) || e.name.startsWith('.')) continue
    const rel = dir ? `${dir}/${e.name}` : e.name
    if (e.isDirectory()) out.push(...repoFiles(root, rel))
    else if (/\.(ts|md)$/.test(e.name)) out.push(rel)
  }
  return out
}

/** Markdown without its fenced code blocks (shell and TOML there are not headings or links). */
export function withoutFences(md: string): string {
  return md.replace(/^ {0,3}(```|~~~)[\s\S]*?^ {0,3}\1[^\n]*$/gm, '')
}

/** The heading's text as a reader cites it: inline code and emphasis marks and link targets gone. */
export function plainHeading(text: string): string {
  return text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return plainHeading(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

export interface Headings {
  /** Each heading as written (inline code marks removed). */
  texts: string[]
  /** Each heading's anchor, with GitHub's `-1`, `-2` for repeats. */
  anchors: Set<string>
}

export function headingsOf(md: string): Headings {
  const texts: string[] = []
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const m of withoutFences(md).matchAll(/^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const text = m[1] as string
    texts.push(plainHeading(text))
    const a = anchorOf(text)
    const n = seen.get(a) ?? 0
    seen.set(a, n + 1)
    anchors.add(n === 0 ? a : `${a}-${n}`)
  }
  return { texts, anchors }
}

/**
 * Does `cited` name one of `texts`? The whole heading, or its start up to a natural break, so
 * `chain/README.md, "Preflight"` names "Preflight (`chain/preflight.ts`)". Case is not compared.
 */
export function namesHeading(texts: readonly string[], cited: string): boolean {
  const c = plainHeading(cited).toLowerCase()
  return texts.some((t) => {
    const h = t.toLowerCase()
    return h === c || (h.startsWith(c) && /^[\s:,(—–-]/.test(h.slice(c.length)))
  })
}

export interface Citation {
  /** The path as written. */
  path: string
  /** A cited heading, or an anchor (without `#`). */
  heading?: string
  anchor?: string
  /** 1-based line in the citing file where the citation starts. */
  line: number
}

/** Comment text of a TypeScript file joined across lines, so a citation may wrap. */
function joinedComments(ts: string): { text: string; lineAt: (i: number) => number } {
  // Keep offsets simple: replace each line break plus the next line's comment marker by spaces
  // of equal length, so an index in the result is an index in the file.
  const text = ts.replace(/\n([ \t]*)(\/\/|\*(?!\/))/g, (m) => ' '.repeat(m.length))
  return { text, lineAt: (i) => ts.slice(0, i).split('\n').length }
}

const TEXT_CITATION =
  /((?:\.\.\/|\.\/)*[A-Za-z0-9_][A-Za-z0-9_./-]*\.md),?[ \t]+(?:→[ \t]+)?"([^"\n]{1,120})"/g
const PATH_ANCHOR = /((?:\.\.\/|\.\/)*[A-Za-z0-9_][A-Za-z0-9_./-]*\.md)#([A-Za-z0-9_-]+)/g
const MD_LINK = /\]\(([^)\s]+)\)/g

/** Every path-and-heading and path-and-anchor citation in a file, and in Markdown its links. */
export function citationsIn(file: string, source: string): Citation[] {
  const out: Citation[] = []
  if (file.endsWith('.ts')) {
    const { text, lineAt } = joinedComments(source)
    for (const m of text.matchAll(TEXT_CITATION))
      out.push({ path: m[1] as string, heading: m[2] as string, line: lineAt(m.index) })
    for (const m of text.matchAll(PATH_ANCHOR))
      out.push({ path: m[1] as string, anchor: m[2] as string, line: lineAt(m.index) })
    return out
  }
  // Markdown: code blocks hold shell and regexes, not citations; line breaks inside a paragraph
  // are spaces. Blanking keeps offsets, so lines can be counted.
  const blanked = source.replace(/^ {0,3}(```|~~~)[\s\S]*?^ {0,3}\1[^\n]*$/gm, (m) =>
    m.replace(/[^\n]/g, ' '),
  )
  const lineAt = (i: number): number => blanked.slice(0, i).split('\n').length
  const flat = blanked.replace(/\n/g, ' ')
  for (const m of flat.matchAll(MD_LINK)) {
    const target = m[1] as string
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
    const [path = '', anchor] = target.split('#')
    if (anchor === undefined && !path.endsWith('.md')) continue
    if (path !== '' && !path.endsWith('.md')) continue
    out.push({ path: path === '' ? file : path, ...(anchor ? { anchor } : {}), line: lineAt(m.index) })
  }
  // Text citations outside links and code spans: `hub/README.md, "A full disk"`.
  const prose = flat.replace(/`[^`]*`/g, (m) => ' '.repeat(m.length))
  for (const m of prose.matchAll(TEXT_CITATION))
    out.push({ path: m[1] as string, heading: m[2] as string, line: lineAt(m.index) })
  return out
}

/** A file's text, read once per test run. */
export function reader(root: string): (rel: string) => string {
  const cache = new Map<string, string>()
  return (rel) => {
    let t = cache.get(rel)
    if (t === undefined) {
      t = readFileSync(join(root, rel), 'utf8')
      cache.set(rel, t)
    }
    return t
  }
}
