// Optional: also pin uploaded files to a Kubo node (`[ipfs] api = "http://127.0.0.1:5001"`).
// Kubo is asked for the same layout as ours, and the CID it answers must equal ours; a mismatch
// or an unreachable node fails the upload, so a listing is never half-pinned by surprise.
import { type Failure, fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'

export type PinResult = { ok: true } | Failure<'UNREACHABLE' | 'UPSTREAM_FAILED'>

export async function pinToKubo(
  api: string,
  name: string,
  bytes: Uint8Array,
  expectedCid: string,
): Promise<PinResult> {
  const url = new URL('/api/v0/add', api)
  for (const [k, v] of Object.entries({
    'cid-version': '1',
    'raw-leaves': 'true',
    chunker: 'size-262144',
    pin: 'true',
    quieter: 'true',
  }))
    url.searchParams.set(k, v)
  const form = new FormData()
  form.append('file', new Blob([bytes as Uint8Array<ArrayBuffer>]), name)
  let res: Response
  try {
    res = await fetch(url, { method: 'POST', body: form })
  } catch (err) {
    return fail('UNREACHABLE', `ipfs.api ${api} unreachable: ${errorText(err)}`)
  }
  const text = await res.text()
  if (!res.ok) return fail('UPSTREAM_FAILED', `ipfs.api ${api} answered ${res.status}: ${text.slice(0, 200)}`)
  const last = text.trim().split('\n').pop() ?? ''
  let hash: unknown
  try {
    hash = (JSON.parse(last) as { Hash?: unknown }).Hash
  } catch {
    return fail('UPSTREAM_FAILED', `ipfs.api ${api} answered something that is not JSON`)
  }
  if (hash !== expectedCid)
    return fail('UPSTREAM_FAILED', `ipfs.api ${api} pinned ${String(hash)}, expected ${expectedCid}`)
  return { ok: true }
}
