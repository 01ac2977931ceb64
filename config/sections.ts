// A config section's settings filled in from its schema: the schema's `default`s are the
// defaults, and the resolved names are the keys in camelCase. One description of each setting
// (key, type, limits, default) gives the check (config/schema-errors.ts), the resolved type
// (`Resolved`) and the defaults (`resolveSection`, `defaultsOf`).
import type { XStatic } from 'typebox/schema'
import { type Camel, camelCase, isPlain } from './keys.ts'

type Props<S> = S extends { properties: infer P } ? P : never
type Required<S> = S extends { required: readonly (infer R)[] } ? R : never
type Always<S, Filled extends string> = {
  [K in keyof Props<S> & string]: Props<S>[K] extends { default: unknown }
    ? K
    : K extends Filled | Required<S>
      ? K
      : never
}[keyof Props<S> & string]

/**
 * A section as the code reads it: a setting with a default (or named in `Filled`: one computed
 * where it is resolved) is always there; any other is `null` when the file leaves it out.
 */
export type Resolved<S, Filled extends string = never> = {
  -readonly [K in keyof Props<S> & string as Camel<K>]: K extends Always<S, Filled>
    ? XStatic<Props<S>[K]>
    : XStatic<Props<S>[K]> | null
}

/** As `Resolved`, but a setting the file leaves out is absent rather than `null`. */
export type ResolvedOptional<S> = {
  -readonly [K in Always<S, never> as Camel<K>]: XStatic<Props<S>[K]>
} & {
  -readonly [K in Exclude<keyof Props<S> & string, Always<S, never>> as Camel<K>]?: XStatic<Props<S>[K]>
}

interface SectionSchema {
  properties: Record<string, unknown>
}

/**
 * A section checked against `schema` (the caller has) filled in: each key's value, else its
 * `filled` value, else its schema default, else null (`absent: 'null'`) or left out (`'omit'`).
 * Keys are named in camelCase. `only` limits it to some keys (the rest the caller maps itself).
 */
export function resolveSection(
  schema: SectionSchema,
  raw: unknown,
  o: { filled?: Record<string, unknown>; absent?: 'null' | 'omit'; only?: readonly string[] } = {},
): Record<string, unknown> {
  const doc = isPlain(raw) ? raw : {}
  const out: Record<string, unknown> = {}
  for (const [key, prop] of Object.entries(schema.properties)) {
    if (o.only && !o.only.includes(key)) continue
    const v = doc[key] ?? o.filled?.[key] ?? defaultOf(prop)
    if (v !== undefined) out[camelCase(key)] = v
    else if ((o.absent ?? 'null') === 'null') out[camelCase(key)] = null
  }
  return out
}

/** A schema node's default; tables and arrays are copied, so a caller may change what it gets. */
export function defaultOf(prop: unknown): unknown {
  if (!isPlain(prop) || !('default' in prop)) return undefined
  return structuredClone(prop.default)
}

/** Every setting of a schema by its dotted name (`broker.port`, `rateLimit.verify.max`), with its default. */
export function defaultsOf(schema: SectionSchema, at = ''): Map<string, unknown> {
  const out = new Map<string, unknown>()
  for (const [key, prop] of Object.entries(schema.properties)) {
    const name = at === '' ? key : `${at}.${key}`
    if (isPlain(prop) && isPlain(prop.properties))
      for (const [k, v] of defaultsOf(prop as unknown as SectionSchema, name)) out.set(k, v)
    else out.set(name, defaultOf(prop))
  }
  return out
}
