// Whether a tool a test drives is on this machine: the command is run, and when it fails the
// test is skipped with what it needs and the error's first line ("needs perl (…): spawnSync perl ENOENT").
import { execFileSync } from 'node:child_process'

/** Null when `file args…` runs; otherwise `needs <what>: <the error's first line>`. */
export function commandMissing(file: string, args: string[], what: string): string | null {
  try {
    execFileSync(file, args, { stdio: 'pipe' })
    return null
  } catch (err) {
    return `needs ${what}: ${String(err).split('\n')[0]}`
  }
}
