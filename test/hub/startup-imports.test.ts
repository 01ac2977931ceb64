// What `svc hub` loads before it knows what it needs (hub/DESIGN.md, "Keeping idle memory
// down"): the static import graph of the hub command, read from the sources. Parts behind a dynamic `import()` (the bridge, the
// attestation part, the local API) are left out on purpose: they load only when configured.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** Value imports of one file (`import type` and `export type` carry nothing at run time). */
function valueImports(file: string): string[] {
  const src = readFileSync(file, 'utf8')
  const out: string[] = []
  for (const m of src.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm)) {
    if (m[1]) continue
    out.push(m[2]!)
  }
  return out
}

/** Every package specifier reached from `entry` by static value imports, with one path to it. */
function staticGraph(entry: string): Map<string, string[]> {
  const packages = new Map<string, string[]>()
  const seen = new Set<string>()
  const walk = (file: string, path: string[]): void => {
    if (seen.has(file)) return
    seen.add(file)
    for (const spec of valueImports(file)) {
      if (spec.startsWith('.')) walk(resolve(dirname(file), spec), [...path, spec])
      else if (!spec.startsWith('node:') && !packages.has(spec)) packages.set(spec, [...path, spec])
    }
  }
  walk(entry, [entry.slice(root.length)])
  return packages
}

const graph = staticGraph(resolve(root, 'cli/hub.ts'))

t.test('the graph is read (it reaches the broker, the engine and the triggers)', async (t) => {
  for (const p of ['aedes', 'level', 'mqtt', 'node-schedule', 'typebox/schema'])
    t.ok(graph.has(p), `${p} is statically imported`)
})

// typebox/schema (the validator, used by the engine) is ~235 files; the Type builders add ~300
// more and typebox/value and typebox/compile ~140: ~3.3 MB of heap for nothing at start.
for (const heavy of ['typebox', 'typebox/value', 'typebox/compile']) {
  t.test(`svc hub does not load ${heavy} at start`, async (t) => {
    t.notOk(
      graph.has(heavy),
      graph.has(heavy) ? `imported via ${graph.get(heavy)!.join(' → ')}` : 'not in the static graph',
    )
  })
}

// Loaded only when configured: boards (serial stack, johnny-five) and attestation (viem).
for (const lazy of ['serialport', 'johnny-five', 'viem']) {
  t.test(`svc hub does not load ${lazy} at start`, async (t) => {
    t.notOk(
      graph.has(lazy),
      graph.has(lazy) ? `imported via ${graph.get(lazy)!.join(' → ')}` : 'not in the static graph',
    )
  })
}
