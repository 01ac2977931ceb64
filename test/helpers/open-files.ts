// The files this process holds open (Linux: /proc/self/fd), for tests of what a store keeps open
// and how it opened it.
import { readFile, readdir, readlink } from 'node:fs/promises'

/** Each descriptor of this process and the path it is open on ('' for one gone meanwhile). */
export async function openFiles(): Promise<{ fd: string; path: string }[]> {
  const fds = await readdir('/proc/self/fd')
  return Promise.all(
    fds.map(async (fd) => ({ fd, path: await readlink(`/proc/self/fd/${fd}`).catch(() => '') })),
  )
}

/** The flags a descriptor was opened with (/proc/self/fdinfo `flags`, octal), or null once it is closed. */
export async function openFlags(fd: string): Promise<number | null> {
  const info = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8').catch(() => '')
  const flags = /^flags:\s+([0-7]+)/m.exec(info)?.[1]
  return flags === undefined ? null : Number.parseInt(flags, 8)
}
