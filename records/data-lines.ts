// Splitting the two local record files (market/API.md, "Local record files on a device").
// The newline is a separator, not part of a line; one final newline is allowed, and a CR
// before it is kept as part of the line (it would be part of the bytes a reader hashes).
import { type Failure, fail } from '../errors/codes.ts'

/** Lines of a JSONL / request-hash file: `\n` separated, one trailing `\n` tolerated. */
export function splitLines(text: string): string[] {
  if (text.length === 0) return []
  const body = text.endsWith('\n') ? text.slice(0, -1) : text
  return body.split('\n')
}

/** A refusal of the files: `line`, when there is one, is the request-hash line at fault (from 1). */
export type RequestListCheck = { ok: true; hashes: string[] } | (Failure<'BAD_INPUT'> & { line?: number })

/**
 * market/API.md, "Local record files on a device": the device refuses to list when a request-hash line is blank, when a request
 * hash appears twice, or when the two files have a different number of lines.
 */
export function checkRecordFiles(dataText: string, requestsText: string): RequestListCheck {
  const data = splitLines(dataText)
  const reqs = splitLines(requestsText)
  if (data.length !== reqs.length) {
    return fail(
      'BAD_INPUT',
      `operations.jsonl has ${data.length} lines but operation-requests.txt has ${reqs.length}`,
    )
  }
  const at = (line: number, why: string): RequestListCheck => ({
    ...fail('BAD_INPUT', `operation-requests.txt line ${line}: ${why}`),
    line,
  })
  const seen = new Map<string, number>()
  for (let i = 0; i < reqs.length; i++) {
    const line = i + 1
    const r = (reqs[i] ?? '').trim()
    if (r === '') return at(line, 'blank (line not attested yet)')
    if (!/^0x[0-9a-fA-F]{64}$/.test(r)) return at(line, 'not a 32-byte hex hash')
    const key = r.toLowerCase()
    const first = seen.get(key)
    if (first !== undefined) return at(line, `same request hash as line ${first}`)
    seen.set(key, line)
  }
  return { ok: true, hashes: reqs.map((r) => r.trim()) }
}
