// Which file system a folder is on, as /proc/self/mountinfo says (proc(5)): the bench's write
// figures are the file system's as much as the hub's, so they are printed beside it.
import { readFileSync, realpathSync } from 'node:fs'

export interface Mount {
  /** Where it is mounted. */
  at: string
  type: string
  /** The device or source (e.g. /dev/mmcblk0p2, /dev/loop2). */
  source: string
  /** The mount's options and the file system's own (data=ordered, discard…). */
  options: string
}

/** The mount `dir` is on: the one with the longest mount point above it. */
export function mountOf(dir: string, mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): Mount | null {
  const path = realpathSync(dir)
  let best: Mount | null = null
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ')
    if (!left || !right) continue
    const f = left.split(' ')
    const [type, source, superOptions] = right.split(' ')
    const at = unoctal(f[4] ?? '')
    const inside = at === '/' || path === at || path.startsWith(`${at}/`)
    if (!inside || !type || (best && best.at.length > at.length)) continue
    best = { at, type, source: unoctal(source ?? ''), options: `${f[5] ?? ''},${superOptions ?? ''}` }
  }
  return best
}

/** mountinfo writes space, tab, newline and backslash as octal escapes. */
const unoctal = (s: string): string =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)))

export const describeMount = (m: Mount | null): string =>
  m ? `${m.type} on ${m.source}, mounted at ${m.at} (${m.options})` : 'an unknown file system'
