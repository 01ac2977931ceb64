// `svc attest export`: operations.jsonl and operation-requests.txt, line n ↔ line n
// (market/API.md, "Local record files on a device"). A request line is blank while its line is
// not attested yet, so a listing built from the files cannot claim an unproven line.
// Both files are written atomically (hub/files/README.md: Small files) and renamed in only once
// both are complete, so a reader never sees half a file or a pair that disagrees in length.
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { openAtomic } from '../../files/atomic-file.ts'
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
  const dataFile = await openAtomic(dataPath, { mode: 0o644 })
  const reqsFile = await openAtomic(requestsPath, { mode: 0o644 }).catch(async (err: unknown) => {
    await dataFile.abort()
    throw err
  })
  const data = dataFile.handle
  const reqs = reqsFile.handle
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
  } catch (err) {
    await dataFile.abort()
    await reqsFile.abort()
    throw err
  }
  await dataFile.commit().catch(async (err: unknown) => {
    await reqsFile.abort()
    throw err
  })
  await reqsFile.commit()
  return { lines, attested, dataPath, requestsPath }
}
