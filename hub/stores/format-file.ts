// The `FORMAT` file of a store that keeps its version beside LevelDB's files (format.ts):
// `{ "store": "broker", "format": 1 }`, written atomically so a power cut leaves the old file or
// the new one (hub/files/atomic-file.ts).
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { errorText } from '../../errors/text.ts'
import { type StoreName, StoreRefused } from './format.ts'

export const FORMAT_FILE = 'FORMAT'

/** The version recorded in `dir`, or null when there is no FORMAT file. */
export async function readFormatFile(dir: string, store: StoreName): Promise<number | null> {
  const file = join(dir, FORMAT_FILE)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new StoreRefused(store, `${file}: cannot be read (${errorText(err)}); check its permissions`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = null
  }
  const p = parsed as { store?: unknown; format?: unknown } | null
  if (p?.store === store && typeof p.format === 'number' && Number.isInteger(p.format) && p.format >= 1)
    return p.format
  throw new StoreRefused(
    store,
    `${file}: not a format record (it should read {"store":"${store}","format":1}); if this svc or an older one made the store, delete the file (the store is then read as format 1), else restore a backup`,
  )
}

export async function writeFormatFile(dir: string, store: StoreName, format: number): Promise<void> {
  await writeFileAtomic(join(dir, FORMAT_FILE), `${JSON.stringify({ store, format })}\n`)
}
