// The common front of a JSON request over MQTT (`boards/<b>/cmd`, `svc/boards/<b>/flash`): a
// size limit, UTF-8 JSON, an object, and the sender's `id` (any string or number it chose, null
// when none) read first so that even a refusal can carry it back. Pure.

export type RequestId = string | number | null

export type RequestObject =
  | { ok: true; o: Record<string, unknown>; id: RequestId }
  | { ok: false; id: RequestId; error: string }

/** `shape` is how the request reads in an error, e.g. `{"id"?, "cmd", "args"?}`. */
export function readRequestObject(payload: Uint8Array, max: number, shape: string): RequestObject {
  if (payload.length > max)
    return { ok: false, id: null, error: `payload: ${payload.length} bytes, more than the ${max} accepted` }
  let v: unknown
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload))
  } catch {
    return { ok: false, id: null, error: `payload: not JSON (expected ${shape})` }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ok: false, id: null, error: `payload: must be a JSON object ${shape}` }
  const o = v as Record<string, unknown>
  const id = o.id
  const idOk =
    id === undefined ||
    (typeof id === 'string' && id.length <= 128) ||
    (typeof id === 'number' && Number.isFinite(id))
  if (!idOk)
    return { ok: false, id: null, error: 'id: must be a string of at most 128 characters, or a number' }
  return { ok: true, o, id: (id as string | number | undefined) ?? null }
}
