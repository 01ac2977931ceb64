// A config file's spelling of keys against the code's (camelCase): hub.toml writes snake_case,
// market.toml camelCase (where these are the identity). Pure, imports nothing: the hub's config
// reads its file with these and `svc hub config` writes it back.

type Doc = Record<string, unknown>

export const isPlain = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `lineCap` → `line_cap`. */
export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
}

/** `line_cap` → `lineCap`, as a type: how a resolved setting is named from its key. */
export type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S

/** `line_cap` → `lineCap`. */
export function camelCase(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase())
}

/** A value's keys in camelCase, recursively: a hub.toml table handed to code that spells them so. */
export function camelKeys<T>(v: unknown): T {
  if (Array.isArray(v)) return v.map((x) => camelKeys(x)) as T
  if (!isPlain(v)) return v as T
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [camelCase(k), camelKeys(x)])) as T
}

/**
 * A JSON Schema literal whose property names are snake_case: how hub.toml takes a table whose
 * shape another module defines in camelCase (the bridge's Firmata profile), one spelling in the
 * file and one source of truth for the shape.
 */
export function snakeCaseSchema<S>(schema: S): S {
  if (Array.isArray(schema)) return schema.map((s) => snakeCaseSchema(s)) as S
  if (!isPlain(schema)) return schema
  const out: Doc = {}
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'properties' && isPlain(v))
      out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [snakeCase(p), snakeCaseSchema(s)]))
    else if (k === 'required' && Array.isArray(v)) out[k] = v.map((p) => snakeCase(String(p)))
    else out[k] = snakeCaseSchema(v)
  }
  return out as S
}
