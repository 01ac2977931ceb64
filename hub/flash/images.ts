// The images a flash leaves on disk, under `<data_dir>/firmware/<board>/`: for each flash, the image
// read back from the board before writing (`<time>-previous.hex`, what a rollback writes, and what
// a person flashes by hand when even that fails) and the image that was written (`<time>-image.hex`).
// The files of the newest `keep` flashes per board stay; older ones are removed after each flash.
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../../files/atomic-file.ts'

export interface FlashFiles {
  /** Sortable time of the flash: `20261127T101530123Z`. */
  stamp: string
  previous: string
  image: string
}

export interface ImageStore {
  /** The board's folder exists and these are the flash's file names (nothing written yet). */
  prepare(board: string, now: number): Promise<FlashFiles>
  /** Writes a file durably (temp file, fsync, rename). */
  write(path: string, text: string): Promise<void>
  /** Removes the files of all but the newest `keep` flashes of the board. */
  prune(board: string): Promise<void>
}

const FILE_RE = /^(\d{8}T\d{9}Z)-(previous|image)\.hex$/

export function flashStamp(now: number): string {
  return new Date(now).toISOString().replace(/[-:.]/g, '')
}

export function createImageStore(o: { dir: string; keep: number }): ImageStore {
  return {
    async prepare(board, now) {
      const dir = join(o.dir, board)
      await mkdir(dir, { recursive: true })
      const stamp = flashStamp(now)
      return { stamp, previous: join(dir, `${stamp}-previous.hex`), image: join(dir, `${stamp}-image.hex`) }
    },
    write: (path, text) => writeFileAtomic(path, text),
    async prune(board) {
      const dir = join(o.dir, board)
      let names: string[]
      try {
        names = await readdir(dir)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
        throw err
      }
      const stamps = [...new Set(names.flatMap((n) => FILE_RE.exec(n)?.[1] ?? []))].sort()
      const old = new Set(stamps.slice(0, Math.max(0, stamps.length - o.keep)))
      await Promise.all(
        names
          .filter((n) => old.has(FILE_RE.exec(n)?.[1] ?? ''))
          .map((n) => rm(join(dir, n), { force: true })),
      )
    },
  }
}
