// http_request: one HTTP(S) request from a step, for hubs that are online. Bounded: a timeout,
// a response size cap, http/https only. The response body is parsed as JSON when the server
// says JSON, else returned as text. A non-2xx status is a result, not a failure: the SOP's
// `when:`/`switch:` decide what it means.
import type { XStatic } from 'typebox/schema'
import { fail, failAt, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import type { Json } from '../sops/types.ts'
import type { Tool, ToolResult } from './types.ts'

export const HttpRequestArgs = {
  type: 'object',
  required: ['url'],
  properties: {
    url: { type: 'string', minLength: 1, maxLength: 8192 },
    method: {
      anyOf: [
        { type: 'string', const: 'GET' },
        { type: 'string', const: 'POST' },
        { type: 'string', const: 'PUT' },
        { type: 'string', const: 'PATCH' },
        { type: 'string', const: 'DELETE' },
        { type: 'string', const: 'HEAD' },
      ],
    },
    headers: { type: 'object', patternProperties: { '^.*$': { type: 'string' } } },
    /** A string is sent as is; any other JSON value is sent as JSON with content-type application/json. */
    body: {},
    timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
  },
  additionalProperties: false,
} as const
export type HttpRequestArgs = XStatic<typeof HttpRequestArgs>

export const MAX_RESPONSE_BYTES = 1024 * 1024

export interface HttpRequestOptions {
  timeoutMs: number
  maxResponseBytes?: number
  fetch?: typeof fetch
}

async function readCapped(res: Response, cap: number): Promise<Result<{ text: string }>> {
  if (!res.body) return { ok: true, text: '' }
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > cap) {
      await reader.cancel()
      return fail('TOO_LARGE', `response is larger than ${cap} bytes`)
    }
    chunks.push(value)
  }
  return { ok: true, text: Buffer.concat(chunks).toString('utf8') }
}

export function createHttpRequest(opts: HttpRequestOptions): Tool {
  const doFetch = opts.fetch ?? fetch
  const cap = opts.maxResponseBytes ?? MAX_RESPONSE_BYTES
  return {
    name: 'http_request',
    description:
      'Make an HTTP(S) request. Output: { status, headers, body } (body JSON when the response is JSON).',
    schema: HttpRequestArgs,
    async run(raw, ctx): Promise<ToolResult> {
      const args = raw as unknown as HttpRequestArgs
      let url: URL
      try {
        url = new URL(args.url)
      } catch {
        return fail('BAD_INPUT', `http_request: url "${args.url}" is not a valid URL`)
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        return fail('BAD_INPUT', `http_request: url scheme ${url.protocol} is not http or https`)
      const method = args.method ?? (args.body === undefined ? 'GET' : 'POST')
      const headers = new Headers(args.headers ?? {})
      let body: string | undefined
      if (args.body !== undefined) {
        if (method === 'GET' || method === 'HEAD')
          return fail('BAD_INPUT', `http_request: a ${method} request cannot have a body`)
        if (typeof args.body === 'string') body = args.body
        else {
          body = JSON.stringify(args.body)
          if (!headers.has('content-type')) headers.set('content-type', 'application/json')
        }
      }
      const timeout = AbortSignal.timeout(args.timeout_ms ?? opts.timeoutMs)
      const signal = AbortSignal.any([timeout, ctx.signal])
      try {
        const res = await doFetch(url, {
          method,
          headers,
          ...(body !== undefined ? { body } : {}),
          signal,
          redirect: 'follow',
        })
        const read = await readCapped(res, cap)
        if (!read.ok) return failAt(`http_request ${method} ${url.href}: `, read)
        let parsed: Json = read.text
        if ((res.headers.get('content-type') ?? '').includes('json') && read.text.trim() !== '') {
          try {
            parsed = JSON.parse(read.text) as Json
          } catch {
            parsed = read.text
          }
        }
        const outHeaders: Record<string, string> = {}
        res.headers.forEach((v, k) => {
          outHeaders[k] = v
        })
        return { ok: true, output: { status: res.status, headers: outHeaders, body: parsed } }
      } catch (err) {
        if (timeout.aborted)
          return fail(
            'TIMEOUT',
            `http_request ${method} ${url.href}: no answer within ${args.timeout_ms ?? opts.timeoutMs} ms`,
          )
        if (ctx.signal.aborted) return fail('CANCELLED', `http_request ${method} ${url.href}: cancelled`)
        const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : ''
        return fail('UNREACHABLE', `http_request ${method} ${url.href}: ${errorText(err)}${cause}`)
      }
    },
  }
}
