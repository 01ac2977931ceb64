// input:/output: contracts checked at the step boundary with typebox (sops/RUNTIME.md, "Contracts at run time").
// A contract is JSON Schema; as a shorthand, an object whose values are all JSON type names
// (`{ "sku": "string", "qty": "integer" }`) means an object with those required fields.
import { Compile } from 'typebox/schema'
import { fail, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import type { Contract, Json } from '../../sops/types.ts'

type Validator = {
  Check(v: unknown): boolean
  Errors(v: unknown): [boolean, { instancePath: string; message: string }[]]
}

const TYPE_NAMES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'])
const SCHEMA_KEYS = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  '$ref',
  'minimum',
  'maximum',
  'pattern',
  'additionalProperties',
])

export function contractSchema(contract: Contract): Json {
  const entries = Object.entries(contract)
  const shorthand =
    entries.length > 0 &&
    entries.every(([k, v]) => !SCHEMA_KEYS.has(k) && typeof v === 'string' && TYPE_NAMES.has(v))
  if (!shorthand) return contract
  return {
    type: 'object',
    required: entries.map(([k]) => k),
    properties: Object.fromEntries(entries.map(([k, v]) => [k, { type: v }])),
  }
}

type Compiled = Result<{ v: Validator }>

const cache = new WeakMap<object, Compiled>()

function compiled(schema: object, source: object = schema): Compiled {
  let c = cache.get(source)
  if (!c) {
    try {
      c = { ok: true, v: Compile(schema as never) as unknown as Validator }
    } catch (err) {
      c = fail('BAD_INPUT', `not a valid schema: ${errorText(err)}`)
    }
    cache.set(source, c)
  }
  return c
}

/** Null when `value` satisfies the schema, else a one-line reason naming the first few failing paths. */
export function schemaProblem(schema: object, value: unknown, source?: object): string | null {
  const c = compiled(schema, source)
  if (!c.ok) return c.error
  if (c.v.Check(value)) return null
  const [, errors] = c.v.Errors(value)
  const parts = errors
    .slice(0, 3)
    .map((e) => `${e.instancePath === '' ? '(root)' : e.instancePath} ${e.message}`)
  return parts.length > 0 ? parts.join('; ') : 'does not match'
}

export function contractProblem(contract: Contract, value: Json): string | null {
  return schemaProblem(contractSchema(contract) as object, value, contract)
}
