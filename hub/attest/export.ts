// `svc attest export`: operations.jsonl and operation-requests.txt, line n ↔ line n
// (marketplace-api: Local record files on a device). A request line is blank while its line is
// not attested yet, so a listing built from the files cannot claim an unproven line.
// Both files are written beside the targets and renamed in, so a reader never sees half a file
// or a pair that disagrees in length.
import { open, mkdir, rename } from 'node:fs/promises'
import { join } from 'node:path'
import type { AttestStore } from './store.ts'

export interface ExportRange {
  /** First seq (0-based, inclusive). */
  from?: number
  /** Last seq, exclusive. */
  to?: number
}

export interface ExportResult {
  lines: number
  attested: number
  dataPath: string
  requestsPath: string
}

export const DATA_FILE = 'operations.jsonl'
export const REQUESTS_FILE = 'operation-requests.txt'

export async function exportAttestations(
  store: AttestStore,
  outDir: string,
  range: ExportRange = {},
): Promise<ExportResult> {
  await mkdir(outDir, { recursive: true })
  const dataPath = join(outDir, DATA_FILE)
  const requestsPath = join(outDir, REQUESTS_FILE)
  const tag = `.${process.pid}.${Date.now()}.tmp`
  const data = await open(dataPath + tag, 'w', 0o644)
  const reqs = await open(requestsPath + tag, 'w', 0o644)
  let lines = 0
  let attested = 0
  try {
    let dBuf: string[] = []
    let rBuf: string[] = []
    const spill = async () => {
      if (dBuf.length === 0) return
      await data.write(dBuf.join(''))
      await reqs.write(rBuf.join(''))
      dBuf = []
      rBuf = []
    }
    for await (const rec of store.range(range.from ?? 0, range.to)) {
      dBuf.push(rec.line + '\n')
      const done = rec.state === 'attested'
      rBuf.push((done ? rec.requestHash : '') + '\n')
      lines++
      if (done) attested++
      if (dBuf.length >= 1000) await spill()
    }
    await spill()
    await data.sync()
    await reqs.sync()
  } finally {
    await data.close()
    await reqs.close()
  }
  await rename(dataPath + tag, dataPath)
  await rename(requestsPath + tag, requestsPath)
  return { lines, attested, dataPath, requestsPath }
}
