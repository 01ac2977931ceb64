// Where each table and key of a TOML file sits. smol-toml returns values without positions, so
// this scanner reads the same text once more for line numbers only: table headers and `key =`
// lines, skipping multi-line strings and arrays' continuation lines. Unknown shapes (dotted keys,
// inline tables) fall back to the table's header line, which is still the right place to look.

export interface TableLines {
  /** Line of `[table]` / `[[table]]` (1 for the root table). */
  header: number
  keys: Map<string, number>
}

export interface TomlLines {
  root: TableLines
  /** `[name]` tables by name. */
  tables: Map<string, TableLines>
  /** `[[name]]` array tables: one entry per element, in order. */
  arrays: Map<string, TableLines[]>
}

function unquote(key: string): string {
  const k = key.trim()
  if ((k.startsWith('"') && k.endsWith('"')) || (k.startsWith("'") && k.endsWith("'"))) return k.slice(1, -1)
  return k
}

export function tomlLines(text: string): TomlLines {
  const root: TableLines = { header: 1, keys: new Map() }
  const tables = new Map<string, TableLines>()
  const arrays = new Map<string, TableLines[]>()
  let current = root
  let inMulti: '"""' | "'''" | undefined
  let depth = 0 // open brackets of a multi-line array value
  const lines = text.split(/\r?\n/)
  lines.forEach((raw, i) => {
    const n = i + 1
    const line = raw.trim()
    if (inMulti) {
      if (line.split(inMulti).length % 2 === 0) inMulti = undefined
      return
    }
    if (depth > 0) {
      depth += (line.match(/\[/g)?.length ?? 0) - (line.match(/\]/g)?.length ?? 0)
      if (depth < 0) depth = 0
      return
    }
    if (line === '' || line.startsWith('#')) return
    const arr = /^\[\[\s*([^\]]+?)\s*\]\]/.exec(line)
    if (arr) {
      const name = unquote(arr[1] ?? '')
      const t: TableLines = { header: n, keys: new Map() }
      const list = arrays.get(name) ?? []
      list.push(t)
      arrays.set(name, list)
      current = t
      return
    }
    const tab = /^\[\s*([^\]]+?)\s*\]/.exec(line)
    if (tab) {
      const name = unquote(tab[1] ?? '')
      const t: TableLines = tables.get(name) ?? { header: n, keys: new Map() }
      tables.set(name, t)
      current = t
      return
    }
    const kv = /^("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=\s*(.*)$/.exec(line)
    if (kv) {
      const key = unquote(kv[1] ?? '')
      if (!current.keys.has(key)) current.keys.set(key, n)
      const value = kv[2] ?? ''
      for (const q of ['"""', "'''"] as const) {
        if (value.includes(q) && value.split(q).length % 2 === 0) {
          inMulti = q
          break
        }
      }
      if (!inMulti && value.startsWith('[')) {
        const open = (value.match(/\[/g)?.length ?? 0) - (value.match(/\]/g)?.length ?? 0)
        if (open > 0) depth = open
      }
    }
  })
  return { root, tables, arrays }
}
