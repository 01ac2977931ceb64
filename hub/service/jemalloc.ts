// Finding a libjemalloc the hub can run on (I/O: the files, and node started with it). A
// library that is there is not enough: one built for 4 KiB pages aborts every program that
// preloads it on a kernel with larger pages (a Raspberry Pi 5's 16 KiB), so it is tried with
// this node before a unit or a bench preloads it.
import { execFile } from 'node:child_process'
import { access } from 'node:fs/promises'
import { promisify } from 'node:util'
import { JEMALLOC_CONF, jemallocCandidates } from './unit.ts'

export type JemallocFound = { path: string } | { path: null; why: string }

/** Whether node started with `path` preloaded runs and has it mapped; the reason when not. */
export async function tryJemalloc(path: string, node = process.execPath): Promise<string | null> {
  const probe =
    "process.exit(require('fs').readFileSync('/proc/self/maps','utf8').includes('libjemalloc') ? 0 : 3)"
  try {
    const { stderr } = await promisify(execFile)(node, ['-e', probe], {
      env: { PATH: process.env.PATH ?? '', LD_PRELOAD: path, MALLOC_CONF: JEMALLOC_CONF },
      timeout: 30_000,
    })
    // ld.so ignores a preload it cannot load and says so; jemalloc warns of a setting it refuses.
    const said = stderr.trim().split('\n')[0]
    return said ? `node with it said: ${said}` : null
  } catch (err) {
    const e = err as { code?: number | string; stderr?: string; signal?: string }
    const said = e.stderr?.trim().split('\n')[0]
    if (e.code === 3) return `node started with it preloaded did not map it${said ? ` (${said})` : ''}`
    return `node started with it preloaded failed (${e.signal ?? `exit ${e.code}`}${said ? `: ${said}` : ''})`
  }
}

/** The first libjemalloc.so.2 of Debian's places that node runs with, or why there is none. */
export async function findJemalloc(
  node = process.execPath,
  arch: string = process.arch,
): Promise<JemallocFound> {
  const tried: string[] = []
  for (const path of jemallocCandidates(arch)) {
    const present = await access(path).then(
      () => true,
      () => false,
    )
    if (!present) continue
    const why = await tryJemalloc(path, node)
    if (why === null) return { path }
    tried.push(`${path}: ${why}`)
  }
  return {
    path: null,
    why:
      tried.length > 0
        ? tried.join('; ')
        : 'no libjemalloc.so.2 is installed (Debian: apt install libjemalloc2)',
  }
}
