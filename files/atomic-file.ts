// The one way the hub, the market and the CLI write a small file (hub/files/README.md: Small files): a temp
// file beside it, created with its final mode, written and fsynced, renamed over the old one, and
// the directory fsynced. A power cut then leaves the old file or the new one, never a torn or
// empty file: the data is on disk before the name points at it (the rename alone can reach the
// disk first on ext4 and others), and the rename itself is on disk once the directory is synced.
import { randomBytes } from 'node:crypto'
import { type FileHandle, link, mkdir, open, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

export interface AtomicWriteOptions {
  /** The file's mode (umask applies), 0o600 for anything holding a secret. Default 0o666 as writeFile. */
  mode?: number
  /** The mode of the folders created for it (umask applies). Default 0o777 as mkdir. */
  dirMode?: number
  /** False: a missing folder is an error (ENOENT), for a path the user named (a systemd unit). */
  makeDir?: boolean
  /**
   * Never replace an existing file: a key made once (the device key) must not be overwritten by a
   * second process making its own at the same moment. Fails with EEXIST when the file is there.
   */
  exclusive?: boolean
}

/** Temp files are `<file>.<pid>.<hex>.tmp`: one a crash left behind is never read, and safe to delete. */
export function tempPathFor(file: string): string {
  return join(dirname(file), `${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
}

/** Writes `data` to `file` so that a crash or power cut at any point leaves the old file or the new. */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  o: AtomicWriteOptions = {},
): Promise<void> {
  const w = await openAtomic(file, o)
  try {
    await w.handle.writeFile(data)
  } catch (err) {
    await w.abort()
    throw err
  }
  await w.commit()
}

/** A file being written atomically: write through `handle`, then commit (or abort). */
export interface AtomicWrite {
  handle: FileHandle
  /** fsync, close, rename (or link) into place, fsync the directory. */
  commit(): Promise<void>
  /** Close and remove the temp file; the old file stays as it was. */
  abort(): Promise<void>
}

/**
 * For a file too large to hold in memory (an attestation export), written in pieces: the same
 * steps as writeFileAtomic, the writing left to the caller.
 */
export async function openAtomic(file: string, o: AtomicWriteOptions = {}): Promise<AtomicWrite> {
  const dir = dirname(file)
  if (o.makeDir !== false)
    await mkdir(dir, { recursive: true, ...(o.dirMode !== undefined ? { mode: o.dirMode } : {}) })
  const tmp = tempPathFor(file)
  const handle = await open(tmp, 'wx', o.mode ?? 0o666)
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await handle.close()
  }
  return {
    handle,
    async commit() {
      try {
        await handle.sync()
        await close()
        // link() fails with EEXIST where rename() would replace: the exclusive create, atomic too.
        if (o.exclusive) await link(tmp, file)
        else await rename(tmp, file)
      } finally {
        await close().catch(() => {})
        // After a rename there is nothing left to remove; after link() or a failure the temp name goes.
        await rm(tmp, { force: true })
      }
      await syncDir(dir)
    },
    async abort() {
      await close().catch(() => {})
      await rm(tmp, { force: true })
    },
  }
}

/** Makes a rename or link in `dir` durable. Some filesystems cannot sync a directory: that is not an error. */
export async function syncDir(dir: string): Promise<void> {
  let fh: FileHandle
  try {
    fh = await open(dir, 'r')
  } catch (err) {
    // Windows will not open a directory as a file; there the rename is as durable as it gets.
    if (refusedDirSync(err)) return
    throw err
  }
  try {
    await fh.sync()
  } catch (err) {
    if (!refusedDirSync(err)) throw err
  } finally {
    await fh.close()
  }
}

function refusedDirSync(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'EINVAL' || code === 'EISDIR' || code === 'EPERM' || code === 'ENOTSUP'
}
