// Which files a backup keeps (hub/backup/README.md, "What an archive holds"): the home's own
// files (hub.toml, the device key, the market key and origin, the chain file), every file in the
// data folder that is not a store, and the SOPs. Not kept: what the hub makes again at each
// start (the local API's token and address), temp files and damaged files set aside.
import { readdir } from 'node:fs/promises'
import { join, relative, resolve } from 'node:path'
import type { ArchiveFile } from './archive.ts'

/** The stores, backed up by their entries (archive.ts), not as files. */
export const STORES = ['engine', 'broker', 'attest'] as const

export interface HubPlaces {
  /** null: no home files (a hub composed without one). */
  home: string | null
  dataDir: string
  sopsDir: string
  /** hub.toml as the hub read it, wherever it is; null: none (defaults). */
  configFile: string | null
}

const REMADE = new Set(['hub.token', 'hub-api.json'])
const skipped = (name: string) => name.endsWith('.tmp') || name.includes('.damaged-') || name.endsWith('.bak')

async function walk(dir: string, skip: (rel: string) => boolean, root = dir): Promise<string[]> {
  let entries
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  const out: string[] = []
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const file = join(dir, e.name)
    const rel = relative(root, file)
    if (skipped(e.name) || skip(rel)) continue
    if (e.isDirectory()) out.push(...(await walk(file, skip, root)))
    else if (e.isFile()) out.push(file)
  }
  return out
}

/** The files to keep, each with its place in the archive (`home/…`, `data/…`, `sops/…`). */
export async function backupFiles(p: HubPlaces): Promise<ArchiveFile[]> {
  const out: ArchiveFile[] = []
  const home = p.home === null ? null : resolve(p.home)
  const configInHome =
    home !== null && p.configFile !== null && resolve(p.configFile) === join(home, 'hub.toml')
  // The home's own files; its folders (data, sops, anything else) are not the home's.
  let top: { name: string; isFile(): boolean }[] = []
  try {
    if (home !== null) top = await readdir(home, { withFileTypes: true })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  for (const e of top.sort((a, b) => a.name.localeCompare(b.name)))
    if (e.isFile() && !REMADE.has(e.name) && !skipped(e.name))
      out.push({ path: `home/${e.name}`, file: join(home!, e.name) })
  if (p.configFile !== null && !configInHome) out.push({ path: 'home/hub.toml', file: p.configFile })
  const stores = new Set<string>(STORES)
  for (const f of await walk(p.dataDir, (rel) => stores.has(rel)))
    out.push({ path: `data/${relative(p.dataDir, f)}`, file: f })
  for (const f of await walk(p.sopsDir, () => false))
    out.push({ path: `sops/${relative(p.sopsDir, f)}`, file: f })
  return out
}
