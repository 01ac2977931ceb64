// A config file's schema errors as `section.key: problem` lines, the one style of message for
// hub.toml and market.toml. The schemas are JSON Schema literals checked by typebox/schema (not
// typebox/value, whose ~440 modules and ~3.3 MB of heap a hub would pay at every start for this
// one check); typebox/value's Errors is typebox/schema's, so every message is the same.
//
// A schema node may carry `errorMessage` (the ajv-errors convention): a string said for any
// failure of that node, or one per keyword (`{ minLength: 'must be at least 32 characters' }`),
// for a value whose rule a keyword spells badly (an address as a pattern).
import { Errors } from 'typebox/schema'
import { isPlain } from './keys.ts'

export interface ErrorStyle {
  /** Said after `unknown field` for a key the file spells the wrong way, e.g. `(… snake_case: line_cap)`. */
  unknownHint?: (key: string) => string | null
}

/** A key as TOML writes it: bare when TOML allows, else quoted (`webhook.secrets."/h"`). */
export function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key)
}

/** A JSON Pointer (`/boards/0/name`) as the file names the field (`boards[0].name`). */
export function fieldName(instancePath: string): string {
  // JSON Pointer segments (RFC 6901): `~1` is `/`, `~0` is `~`.
  const parts = pointer(instancePath)
  return (
    parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? tomlKey(p) : `.${tomlKey(p)}`)).join('') ||
    '(top level)'
  )
}

function pointer(path: string): string[] {
  return path
    .replace(/^#/, '')
    .split('/')
    .filter((p) => p !== '')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
}

/**
 * The `errorMessage` that speaks for an error: on the node its schemaPath names, or on a node
 * above it for the same field (a union's member failing speaks with the union's message).
 */
function ownMessage(schema: unknown, schemaPath: string, keyword: string): string | null {
  let at: unknown = schema
  let own: string | null = null
  let parent = ''
  for (const p of pointer(schemaPath)) {
    at = Array.isArray(at) ? at[Number(p)] : isPlain(at) ? at[p] : undefined
    // A step into a property or an item is another field: what was said above is not for it.
    if (
      parent === 'properties' ||
      parent === 'patternProperties' ||
      p === 'items' ||
      p === 'additionalProperties'
    )
      own = null
    parent = p
    if (!isPlain(at)) continue
    const m = at.errorMessage
    if (typeof m === 'string') own = m
    else if (isPlain(m) && typeof m[keyword] === 'string') own = m[keyword]
  }
  return own
}

/** Every schema error of `value` as a `field: problem` line, each said once. */
export function schemaErrors(schema: object, value: unknown, style: ErrorStyle = {}): string[] {
  const out: string[] = []
  const [, errors] = Errors(schema as Parameters<typeof Errors>[0], value)
  for (const e of errors) {
    if (e.keyword === 'boolean') continue // reported once by its additionalProperties parent
    const at = fieldName(e.instancePath)
    if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperties?: string[] }).additionalProperties ?? []
      for (const key of extra) {
        const hint = style.unknownHint?.(key) ?? null
        out.push(
          `${at === '(top level)' ? tomlKey(key) : `${at}.${tomlKey(key)}`}: unknown field${hint ? ` (${hint})` : ''}`,
        )
      }
      continue
    }
    const own = ownMessage(schema, e.schemaPath, e.keyword)
    if (own !== null) {
      out.push(`${at}: ${own}`)
      continue
    }
    if (e.keyword === 'enum') {
      const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues ?? []
      out.push(`${at}: must be one of ${allowed.map(String).join(', ')}`)
      continue
    }
    if (e.keyword === 'const') continue // a union's members; its anyOf line says it
    out.push(`${at}: ${e.message}`)
  }
  return [...new Set(out)]
}
