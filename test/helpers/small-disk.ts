// A small tmpfs for the tests of a full disk (an SD card that fills up): mounted in a temp folder
// for the test file and unmounted at its end, or why it cannot be (mounting needs root on Linux),
// and a filler that eats every byte left.
import { execFileSync } from 'node:child_process'
import { open } from 'node:fs/promises'
import { tempDir } from './tmp.ts'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** `path` is mounted when `error` is null; otherwise `error` says why not. */
export async function smallDisk(
  t: Teardown,
  mb = 8,
  prefix = 'svc-small-disk-',
): Promise<{ path: string; error: string | null }> {
  const path = await tempDir(t, prefix)
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', path], { stdio: 'pipe' })
    t.teardown(() => execFileSync('umount', ['-l', path], { stdio: 'pipe' }))
    return { path, error: null }
  } catch (err) {
    return { path, error: String((err as { stderr?: Buffer }).stderr ?? err).trim() }
  }
}

/** Writes `file` until its filesystem has no room left (ENOSPC). */
export async function fillDisk(file: string): Promise<void> {
  const fh = await open(file, 'w')
  try {
    for (;;) await fh.write(Buffer.alloc(64 * 1024))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  } finally {
    await fh.close()
  }
}
