// Builds a listing's three files from attested lines: operations.jsonl and
// operation-requests.txt by the attestation export (line n <-> line n), then checks them as the
// market's rules demand (market/API.md, "Local record files on a device": no blank
// request-hash line, no duplicate, same line counts; each refusal names the line) and writes manifest.json.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { fail, type Result } from '../../errors/codes.ts'
import { exportAttestations } from '../attest/export.ts'
import type { AttestStore } from '../attest/store.ts'
import { MAX_MANIFEST_ROWS, buildManifest } from '../../records/manifest.ts'
import { checkRecordFiles, splitLines } from '../../records/data-lines.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { MANIFEST_FILE } from './queue.ts'
import type { ListingRange } from './record.ts'

export type BuildResult = Result<{ rows: number }>

/** Checks a pair of record files already in `dir` and writes the manifest beside them. */
export async function manifestFromFiles(dir: string, agentId: string, firstLine = 1): Promise<BuildResult> {
  const data = await readFile(join(dir, 'operations.jsonl'), 'utf8')
  const reqs = await readFile(join(dir, 'operation-requests.txt'), 'utf8')
  const checked = checkRecordFiles(data, reqs)
  if (!checked.ok) {
    // The files are numbered from 1; say which attested line that is when the range starts later.
    const hint =
      checked.line !== undefined && firstLine !== 1 ? ` (attested line ${checked.line + firstLine - 1})` : ''
    return fail(checked.code, checked.error + hint)
  }
  const lines = splitLines(data)
  if (lines.length === 0) return fail('BAD_INPUT', 'no attested lines in the range: nothing to list')
  if (lines.length > MAX_MANIFEST_ROWS)
    return fail(
      'TOO_LARGE',
      `${lines.length} lines: a listing holds at most ${MAX_MANIFEST_ROWS} (use --from/--to)`,
    )
  const manifest = buildManifest(agentId, lines, checked.hashes as Hex[])
  await writeFileAtomic(join(dir, MANIFEST_FILE), JSON.stringify(manifest) + '\n')
  return { ok: true, rows: lines.length }
}

export async function buildListingFiles(
  store: AttestStore,
  dir: string,
  range: ListingRange,
  agentId: string,
): Promise<BuildResult> {
  await exportAttestations(store, dir, range)
  return manifestFromFiles(dir, agentId, (range.from ?? 0) + 1)
}
