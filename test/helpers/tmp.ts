// A fresh temporary folder per test, removed when the test ends.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** What a tap test offers helpers that clean up after it. */
export interface Teardown {
  teardown(fn: () => unknown): void
}

export async function tempDir(t: Teardown, prefix = 'svc-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}
