// chain_attest: the terminal step of a business operation (sop-format: "Attestation step").
// Builds the record, checks it against the configured record schema, canonicalises it (RFC 8785)
// into one line, hashes it (paramsHash = keccak256 of the line's bytes), has the device key sign
// it, and stores line + signature + state in one sync batch before reporting success.
// The chain is not touched here: the hub's sync queue does that when online. The store and the
// signer are ports (attest-ports.ts) the hub implements.
import { readFile } from 'node:fs/promises'
import { Ajv, type ErrorObject } from 'ajv'
import { fail, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import { tryCanonicalLine } from '../records/canonical.ts'
import { lineHash } from '../records/hash.ts'
import type { Json } from '../sops/types.ts'
import type { LineSigner, LineStore, StoredLine } from './attest-ports.ts'
import type { Tool, ToolContext, ToolResult } from './types.ts'

export interface ChainAttestDeps {
  store: LineStore
  signer: LineSigner
  /** JSON Schema (draft-07 or 2019-09 subset ajv accepts) the record must satisfy. */
  schema?: object
  /** Clock for the record's `at`; injected so tests can fix it. */
  now?: () => Date
}

const MAX_ACTION = 128
const MAX_URI = 2048
/** A line is one row of a listing; keep it well under what a request or a page can carry. */
export const MAX_LINE_BYTES = 64 * 1024

// A JSON Schema literal, like the hub's other tools (tools/types.ts says why).
const ArgsSchema = {
  type: 'object',
  required: ['action', 'request_uri', 'params'],
  properties: {
    action: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_ACTION,
      description: 'business action name, e.g. "vend"',
    },
    request_uri: {
      type: 'string',
      maxLength: MAX_URI,
      description: 'where the request behind this operation is described',
    },
    params: {
      type: 'object',
      patternProperties: { '^.*$': {} },
      description: 'the operation record, built from earlier step outputs',
    },
  },
  additionalProperties: false,
} as const

function schemaReason(errors: ErrorObject[] | null | undefined): string {
  const e = errors?.[0]
  if (!e) return 'record does not match the record schema'
  const where = e.instancePath === '' ? 'record' : `record${e.instancePath.replace(/\//g, '.')}`
  const extra =
    e.keyword === 'additionalProperties'
      ? ` (${(e.params as { additionalProperty?: string }).additionalProperty})`
      : ''
  return `record schema: ${where} ${e.message ?? 'is invalid'}${extra}`
}

function output(rec: StoredLine): Json {
  return { seq: rec.seq, paramsHash: rec.paramsHash, requestHash: rec.requestHash, line: rec.line }
}

function checkArgs(
  args: Json,
): Result<{ action: string; requestUri: string; params: { [k: string]: Json } }> {
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return fail('BAD_INPUT', 'chain_attest: arguments must be an object')
  const { action, request_uri: requestUri, params } = args
  for (const k of Object.keys(args))
    if (!['action', 'request_uri', 'params'].includes(k))
      return fail('BAD_INPUT', `chain_attest: unknown argument "${k}"`)
  if (typeof action !== 'string' || action.length === 0 || action.length > MAX_ACTION)
    return fail('BAD_INPUT', `chain_attest: action must be a string of 1-${MAX_ACTION} characters`)
  if (typeof requestUri !== 'string' || requestUri.length > MAX_URI)
    return fail('BAD_INPUT', `chain_attest: request_uri must be a string of at most ${MAX_URI} characters`)
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    return fail('BAD_INPUT', 'chain_attest: params must be an object')
  return { ok: true, action, requestUri, params }
}

export type SchemaLoad = Result<{ schema: object }>

/**
 * Reads and compiles a record schema file (JSON Schema, as ajv accepts it), so a bad schema is
 * reported at start with its file name rather than failing every attestation step later.
 */
export async function loadRecordSchema(path: string): Promise<SchemaLoad> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return fail('NOT_FOUND', `record schema ${path}: not found`)
    return fail('IO_FAILED', `record schema ${path}: ${errorText(err)}`)
  }
  let schema: unknown
  try {
    schema = JSON.parse(text)
  } catch (err) {
    return fail('BAD_CONFIG', `record schema ${path}: not JSON (${errorText(err)})`)
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    return fail('BAD_CONFIG', `record schema ${path}: must be a JSON object`)
  try {
    new Ajv({ strict: false }).compile(schema)
  } catch (err) {
    return fail('BAD_CONFIG', `record schema ${path}: ${errorText(err)}`)
  }
  return { ok: true, schema }
}

export function createChainAttestTool(deps: ChainAttestDeps): Tool {
  const validate = deps.schema ? new Ajv({ allErrors: false, strict: false }).compile(deps.schema) : undefined
  const now = deps.now ?? (() => new Date())

  return {
    name: 'chain_attest',
    description:
      'Record one business operation as a signed, canonical line, to be attested on the validation registry when online.',
    schema: ArgsSchema,
    async run(args: Json, ctx: ToolContext): Promise<ToolResult> {
      const a = checkArgs(args)
      if (!a.ok) return a
      // sops/RUNTIME.md, "Attested lines": the hub never attests a business operation twice. A step re-run after a
      // restart carries the same idempotency key and gets the stored line back.
      const existing = await deps.store.byIdempotencyKey(ctx.idempotencyKey)
      if (existing) return { ok: true, output: output(existing) }

      const record = {
        action: a.action,
        at: now().toISOString(),
        params: a.params,
        request_uri: a.requestUri,
      }
      if (validate && !validate(record)) return fail('BAD_INPUT', schemaReason(validate.errors))
      const canon = tryCanonicalLine(record)
      if (!canon.ok)
        return fail('BAD_INPUT', `chain_attest: params ${canon.error.replace(/^\$/, '')} cannot be recorded`)
      if (Buffer.byteLength(canon.line) > MAX_LINE_BYTES)
        return fail('TOO_LARGE', `chain_attest: the record is over ${MAX_LINE_BYTES} bytes`)
      const paramsHash = lineHash(canon.line)
      const signature = await deps.signer.signLine(canon.line)
      try {
        const { record: rec } = await deps.store.append({
          idempotencyKey: ctx.idempotencyKey,
          action: a.action,
          requestUri: a.requestUri,
          line: canon.line,
          paramsHash,
          signature,
          signer: deps.signer.address,
        })
        return { ok: true, output: output(rec) }
      } catch (err) {
        return fail('IO_FAILED', `chain_attest: could not store the line: ${errorText(err)}`)
      }
    },
  }
}
