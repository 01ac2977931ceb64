// Splitting the two local record files (market/API.md, "Local record files on a device").
// The newline is a separator, not part of a line; one final newline is allowed, and a CR
// before it is kept as part of the line (it would be part of the bytes a reader hashes).

/** Lines of a JSONL / request-hash file: `\n` separated, one trailing `\n` tolerated. */
export function splitLines(text: string): string[] {
  if (text.length === 0) return []
  const body = text.endsWith('\n') ? text.slice(0, -1) : text
  return body.split('\n')
}

export type RequestListCheck = { ok: true; hashes: string[] } | { ok: false; error: string }

/**
 * market/API.md, "Local record files on a device": the device refuses to list when a request-hash line is blank, when a request
 * hash appears twice, or when the two files have a different number of lines.
 */
export function checkRecordFiles(dataText: string, requestsText: string): RequestListCheck {
  const data = splitLines(dataText)
  const reqs = splitLines(requestsText)
  if (data.length !== reqs.length) {
    return {
      ok: false,
      error: `operations.jsonl has ${data.length} lines but operation-requests.txt has ${reqs.length}`,
    }
  }
  const seen = new Map<string, number>()
  for (let i = 0; i < reqs.length; i++) {
    const r = (reqs[i] ?? '').trim()
    if (r === '')
      return { ok: false, error: `operation-requests.txt line ${i + 1}: blank (line not attested yet)` }
    if (!/^0x[0-9a-fA-F]{64}$/.test(r))
      return { ok: false, error: `operation-requests.txt line ${i + 1}: not a 32-byte hex hash` }
    const key = r.toLowerCase()
    const first = seen.get(key)
    if (first !== undefined)
      return { ok: false, error: `operation-requests.txt line ${i + 1}: same request hash as line ${first}` }
    seen.set(key, i + 1)
  }
  return { ok: true, hashes: reqs.map((r) => r.trim()) }
}
