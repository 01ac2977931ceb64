// Commands that talk to the running hub over its local API: the URL from the info file, the
// bearer token from the token file (both written by the hub at start, 0600), loopback only.
import { readApiInfo, readApiToken } from '../hub/api/token.ts'
import { svcPaths } from '../hub/paths.ts'
import { type CliIo, UserError } from './io.ts'

/** Whether the process a hub's info file names is still there (EPERM: it is, owned by another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export async function callHub(
  io: CliIo,
  method: 'GET' | 'POST',
  path: string,
  body?: object,
): Promise<unknown> {
  const r = await requestHub(io, method, path, body)
  if (r.status >= 400)
    throw new UserError((r.body as { error?: string }).error ?? `the hub answered ${r.status}`)
  return r.body
}

/** The hub's answer whatever its status (a 404 may be an answer, not a failure). */
export async function requestHub(
  io: CliIo,
  method: 'GET' | 'POST',
  path: string,
  body?: object,
): Promise<{ status: number; body: unknown; url: string }> {
  const { res, url } = await fetchHub(io, method, path, body, 10_000)
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new UserError(`the hub answered ${res.status} with something that is not JSON`)
  }
  return { status: res.status, body: parsed, url }
}

/**
 * One request to the running hub with its token; the response as it comes (a stream is read by
 * the caller). `timeoutMs`: none for an answer that lasts as long as its work (a flash).
 */
export async function fetchHub(
  io: CliIo,
  method: 'GET' | 'POST',
  path: string,
  body?: object,
  timeoutMs?: number,
): Promise<{ res: Response; url: string }> {
  const paths = svcPaths(io.env)
  const info = await readApiInfo(paths.apiInfo)
  if (!info.ok) throw new UserError(info.error)
  const token = await readApiToken(paths.apiToken)
  if (!token.ok) throw new UserError(token.error)
  try {
    const res = await fetch(info.value.url + path, {
      method,
      headers: {
        authorization: `Bearer ${token.value}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      ...(timeoutMs !== undefined ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
    })
    return { res, url: info.value.url }
  } catch {
    throw new UserError(
      `no hub is running at ${info.value.url} (it did not answer); start one with \`svc hub run\``,
    )
  }
}
