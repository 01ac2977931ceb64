// The common front of a JSON request over MQTT (`boards/<b>/cmd`, `svc/boards/<b>/flash`): a
// size limit, UTF-8 JSON, an object, and the sender's `id` (any string or number it chose, null
// when none) read first so that even a refusal can carry it back. Pure.
import { type Failure, fail } from '../errors/codes.ts'

export type RequestId = string | number | null

/** The code stays beside the result: the MQTT replies carry wire codes of their own (bridge/README.md). */
export type RequestRefusal = Failure<'BAD_INPUT' | 'TOO_LARGE'> & { id: RequestId }

export type RequestObject = { ok: true; o: Record<string, unknown>; id: RequestId } | RequestRefusal

/** `shape` is how the request reads in an error, e.g. `{"id"?, "cmd", "args"?}`. */
export function readRequestObject(payload: Uint8Array, max: number, shape: string): RequestObject {
  if (payload.length > max)
    return {
      ...fail('TOO_LARGE', `payload: ${payload.length} bytes, more than the ${max} accepted`),
      id: null,
    }
  let v: unknown
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload))
  } catch {
    return { ...fail('BAD_INPUT', `payload: not JSON (expected ${shape})`), id: null }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ...fail('BAD_INPUT', `payload: must be a JSON object ${shape}`), id: null }
  const o = v as Record<string, unknown>
  const id = o.id
  const idOk =
    id === undefined ||
    (typeof id === 'string' && id.length <= 128) ||
    (typeof id === 'number' && Number.isFinite(id))
  if (!idOk)
    return { ...fail('BAD_INPUT', 'id: must be a string of at most 128 characters, or a number'), id: null }
  return { ok: true, o, id: (id as string | number | undefined) ?? null }
}
