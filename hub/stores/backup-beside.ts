// The copy of a store taken before an upgrade changes it (hub/stores/README.md, "Format versions
// and upgrades"): the closed store's folder copied whole beside it, `<data>/engine.format1-<UTC
// time>.bak/`, each file and folder synced, under a `.partial` name renamed once complete, so a
// copy cut short by a crash never passes for a whole one.
import { constants } from 'node:fs'
import { copyFile, mkdir, open, readdir, rename, rm, stat, statfs } from 'node:fs/promises'
import { basename, dirname, join, relative } from 'node:path'
import type { Log } from '../log.ts'
import { bytesText } from '../disk/reserve.ts'
import { type StoreName, StoreRefused } from './format.ts'

/** Progress is told every this many bytes copied (and at the end). */
const TELL_EVERY = 64 * 1024 * 1024

interface Tree {
  files: { path: string; size: number }[]
  dirs: string[]
  bytes: number
}

async function walk(dir: string, into: Tree = { files: [], dirs: [dir], bytes: 0 }): Promise<Tree> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) {
      into.dirs.push(p)
      await walk(p, into)
    } else if (e.isFile()) {
      const size = (await stat(p)).size
      into.files.push({ path: p, size })
      into.bytes += size
    }
  }
  return into
}

async function syncPath(p: string): Promise<void> {
  const fh = await open(p, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/** `<data>/<store>.format<n>-<UTC time>.bak`, one not taken yet. */
async function freeName(dir: string, from: number, at: Date): Promise<string> {
  const stamp = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  const base = join(dirname(dir), `${basename(dir)}.format${from}-${stamp}`)
  for (let i = 1; ; i++) {
    const name = i === 1 ? `${base}.bak` : `${base}-${i}.bak`
    if (!(await stat(name).catch(() => null))) return name
  }
}

export interface BackupOptions {
  store: StoreName
  /** The store's folder (closed). */
  dir: string
  /** The format it is in now, for the copy's name. */
  from: number
  /** Bytes to leave free on the disk after the copy and the upgrade (the hub's reserve). */
  reserve: number
  /** How many bytes the upgrade writes besides, as a multiple of the store's size. */
  upgradeGrowth: number
  log: Log
  now?: () => Date
}

/** Copies the store beside itself; resolves to the copy's path. Refuses (StoreRefused) with no room. */
export async function backupBeside(o: BackupOptions): Promise<string> {
  const tree = await walk(o.dir)
  const fs = await statfs(dirname(o.dir))
  const free = fs.bavail * fs.bsize
  const need = Math.ceil(tree.bytes * (1 + o.upgradeGrowth)) + o.reserve
  if (free < need)
    throw new StoreRefused(
      o.store,
      `${o.dir}: the ${o.store} store (${bytesText(tree.bytes)}) needs upgrading and a copy of it kept beside it first, but ${dirname(o.dir)} has ${bytesText(free)} free of the ${bytesText(need)} that takes (copy, upgrade and the disk reserve); free some space and start again`,
    )
  const target = await freeName(o.dir, o.from, o.now?.() ?? new Date())
  const partial = `${target}.partial`
  await rm(partial, { recursive: true, force: true })
  o.log.info(
    { store: o.store, from: o.dir, to: target, files: tree.files.length, bytes: tree.bytes },
    `${o.store} store: copying it to ${target} before the upgrade (${tree.files.length} files, ${bytesText(tree.bytes)})`,
  )
  for (const d of tree.dirs) await mkdir(join(partial, relative(o.dir, d)), { recursive: true })
  let copied = 0
  let told = 0
  for (const [i, f] of tree.files.entries()) {
    const to = join(partial, relative(o.dir, f.path))
    await copyFile(f.path, to, constants.COPYFILE_EXCL)
    await syncPath(to)
    copied += f.size
    if (copied - told >= TELL_EVERY) {
      told = copied
      o.log.info(
        { store: o.store, files: i + 1, of: tree.files.length, bytes: copied, total: tree.bytes },
        `${o.store} store backup: ${bytesText(copied)} of ${bytesText(tree.bytes)} copied`,
      )
    }
  }
  // The folders' entries on disk before the name says the copy is whole.
  for (const d of tree.dirs.reverse()) await syncPath(join(partial, relative(o.dir, d)))
  await rename(partial, target)
  await syncPath(dirname(target))
  o.log.info(
    { store: o.store, backup: target, files: tree.files.length, bytes: copied },
    `${o.store} store backup made: ${target} (${tree.files.length} files, ${bytesText(copied)})`,
  )
  return target
}
