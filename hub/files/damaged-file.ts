// Reading a small file that a power cut, a full disk or a failing SD card may have damaged
// (hub/files/README.md: Small files). Two answers, chosen per file there:
// - the hub can go on without it (what it remembers is a convenience: cron catch-up, AMQP
//   bindings, Home Assistant discovery): the file is renamed aside, kept for whoever wants to look,
//   and one warning says what was wrong, what the hub does instead and where the copy is;
// - it cannot (a key or a password only its owner can make again): the start stops with one line
//   naming the file, what is wrong and the fix. Such a file is never moved or replaced here.
import { readFile, rename } from 'node:fs/promises'
import { dirname } from 'node:path'
import { fail, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { syncDir } from '../../files/atomic-file.ts'
import type { Log } from '../log.ts'

/** A state file's value, or why it is damaged (IO_FAILED: what the hub wrote did not survive). */
export type Parsed<T> = Result<{ value: T }>

/** `20250101T120000.123Z`: UTC, sortable, and safe in a file name on every filesystem. */
export function damagedStamp(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '')
}

export interface SetAsideOptions {
  log: Log
  /** What the hub does without the file, said in the warning ("cron starts without catch-up memory"). */
  instead: string
  now?: () => Date
}

/**
 * The file's value; null when there is none, or when it was damaged and has been renamed aside to
 * `<file>.damaged-<UTC time>` with one warning. An empty file counts as damaged: every writer
 * writes at least `{}`, so 0 bytes is what a torn write leaves, not something written.
 */
export async function readOrSetAside<T>(
  file: string,
  parse: (text: string) => Parsed<T>,
  o: SetAsideOptions,
): Promise<T | null> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    if (e.code === 'ENOENT') return null
    // Unreadable is not shown to be damaged (a permission, a failing card): leave it where it is.
    o.log.warn(
      { file, problem: e.message, instead: o.instead },
      `${file} cannot be read (${e.code ?? e.message}); ${o.instead}`,
    )
    return null
  }
  const r: Parsed<T> = text.length === 0 ? fail('IO_FAILED', 'empty (0 bytes)') : parseSafely(parse, text)
  if (r.ok) return r.value
  const problem = r.error
  const aside = `${file}.damaged-${damagedStamp((o.now ?? (() => new Date()))())}`
  try {
    await rename(file, aside)
    await syncDir(dirname(file))
  } catch (err) {
    o.log.warn(
      { file, problem, instead: o.instead, renameError: errorText(err) },
      `${file} is damaged (${problem}); ${o.instead}; it could not be renamed aside (${errorText(err)}) and will be overwritten`,
    )
    return null
  }
  o.log.warn(
    { file, problem, instead: o.instead, damagedCopy: aside },
    `${file} is damaged (${problem}); ${o.instead}; the damaged copy is ${aside}`,
  )
  return null
}

function parseSafely<T>(parse: (text: string) => Parsed<T>, text: string): Parsed<T> {
  try {
    return parse(text)
  } catch (err) {
    return fail('IO_FAILED', errorText(err))
  }
}

/** JSON.parse as a Parsed, for the JSON state files. */
export function parseJson(text: string): Parsed<unknown> {
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch (err) {
    return fail('IO_FAILED', `not JSON: ${errorText(err)}`)
  }
}

/**
 * The one line that stops a start on a file the hub cannot go on without: what the file is and
 * where, what is wrong with it, and what its owner does about it ("device key /…/device.key:
 * expected 32 bytes of hex; …"). Thrown, it reaches `svc hub: could not start:`.
 */
export class DamagedFileError extends Error {
  constructor(
    readonly what: string,
    readonly file: string,
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`${what} ${file}: ${problem}; ${fix}`)
    this.name = 'DamagedFileError'
  }
}
