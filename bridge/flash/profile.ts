// How a board is flashed: which avrdude programmer and part, at which baud, and how the board is
// put into its bootloader first. Pure: the profiles and the check of a `[[boards]] flash` value
// from hub.toml; avrdude.ts runs them.
import { type Failure, fail } from '../../errors/codes.ts'

/**
 * How the bootloader is entered. `dtr`: avrdude's own DTR/RTS pulse when it opens the port, which
 * resets a real Uno through its auto-reset capacitor. `command`: a program run just before each
 * avrdude session (a GPIO wired to RESET, or the emulated Uno's reset line: `kill -USR1 <pid>`).
 */
export type ResetHow = { kind: 'dtr' } | { kind: 'command'; argv: string[] }

export interface FlashProfile {
  /** avrdude's `-c`, e.g. `arduino` (STK500v1 to optiboot). */
  programmer: string
  /** avrdude's `-p`, e.g. `m328p`. */
  part: string
  /** The bootloader's baud rate (`-b`). */
  baud: number
  reset: ResetHow
  /**
   * The most an image may hold: the flash below the bootloader. A larger image would run into the
   * bootloader's pages, which a chip's lock bits protect and an emulator's flash does not.
   */
  maxImageBytes?: number
}

export const FLASH_PROFILES: Record<string, FlashProfile> = {
  // An Arduino Uno with optiboot in its 512-byte boot section (boards.txt: uno.upload.*).
  uno: { programmer: 'arduino', part: 'm328p', baud: 115200, reset: { kind: 'dtr' }, maxImageBytes: 32_256 },
}

/** A profile comes from hub.toml (`[[boards]] flash`): a refusal is the operator's configuration. */
export type ProfileCheck = { ok: true; value: FlashProfile } | Failure<'BAD_CONFIG'>

// avrdude's ids are letters, digits, `_` and `-`; never a leading `-`, which avrdude would read as
// an option of its own.
const ID = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/
const KEYS = ['profile', 'programmer', 'part', 'baud', 'reset', 'maxImageBytes']

/**
 * A flash profile from configuration: a profile's name (`"uno"`), or a table with `profile` (a
 * name to start from) and any of `programmer`, `part`, `baud`, `reset` (`"dtr"`, `{ kind = "dtr" }`
 * or `{ kind = "command", argv = [...] }`) and `maxImageBytes`. Errors name the key under `where`,
 * e.g. `[[boards]] flash.baud: must be ...`.
 */
export function checkFlashProfile(raw: unknown, where: string): ProfileCheck {
  const known = Object.keys(FLASH_PROFILES).join(', ')
  const named = (name: string, at: string): ProfileCheck => {
    const p = Object.hasOwn(FLASH_PROFILES, name) ? FLASH_PROFILES[name] : undefined
    return p
      ? { ok: true, value: { ...p } }
      : fail('BAD_CONFIG', `${at}: unknown flash profile ${JSON.stringify(name)} (known: ${known})`)
  }
  if (typeof raw === 'string') return named(raw, where)
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return fail('BAD_CONFIG', `${where}: must be a profile name (${known}) or a table`)
  const t = raw as Record<string, unknown>
  for (const k of Object.keys(t)) {
    if (!KEYS.includes(k)) return fail('BAD_CONFIG', `${where}.${k}: unknown key (known: ${KEYS.join(', ')})`)
  }
  let base: Partial<FlashProfile> = {}
  if (t.profile !== undefined) {
    if (typeof t.profile !== 'string') return fail('BAD_CONFIG', `${where}.profile: must be one of ${known}`)
    const b = named(t.profile, `${where}.profile`)
    if (!b.ok) return b
    base = b.value
  }
  const out: Partial<FlashProfile> = { ...base }
  for (const k of ['programmer', 'part'] as const) {
    const v = t[k]
    if (v === undefined) continue
    if (typeof v !== 'string' || !ID.test(v))
      return fail('BAD_CONFIG', `${where}.${k}: must be an avrdude id (letters, digits, _ and -)`)
    out[k] = v
  }
  if (t.baud !== undefined) {
    if (!Number.isInteger(t.baud) || (t.baud as number) < 300 || (t.baud as number) > 2_000_000)
      return fail('BAD_CONFIG', `${where}.baud: must be an integer from 300 to 2000000`)
    out.baud = t.baud as number
  }
  if (t.maxImageBytes !== undefined) {
    const m = t.maxImageBytes
    if (!Number.isInteger(m) || (m as number) < 1 || (m as number) > 256 * 1024)
      return fail('BAD_CONFIG', `${where}.maxImageBytes: must be an integer from 1 to 262144`)
    out.maxImageBytes = m as number
  }
  if (t.reset !== undefined) {
    const r = checkReset(t.reset, `${where}.reset`)
    if (!r.ok) return r
    out.reset = r.value
  }
  for (const k of ['programmer', 'part', 'baud'] as const) {
    if (out[k] === undefined)
      return fail('BAD_CONFIG', `${where}.${k}: missing (or name a profile to start from: profile = "uno")`)
  }
  return { ok: true, value: { reset: { kind: 'dtr' }, ...out } as FlashProfile }
}

function checkReset(raw: unknown, where: string): { ok: true; value: ResetHow } | Failure<'BAD_CONFIG'> {
  const shape = `"dtr", { kind = "dtr" } or { kind = "command", argv = ["program", "arg", ...] }`
  if (raw === 'dtr') return { ok: true, value: { kind: 'dtr' } }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return fail('BAD_CONFIG', `${where}: must be ${shape}`)
  const r = raw as Record<string, unknown>
  const extra = Object.keys(r).find((k) => k !== 'kind' && k !== 'argv')
  if (extra) return fail('BAD_CONFIG', `${where}.${extra}: unknown key (known: kind, argv)`)
  if (r.kind === 'dtr') {
    if (r.argv !== undefined) return fail('BAD_CONFIG', `${where}.argv: only for kind = "command"`)
    return { ok: true, value: { kind: 'dtr' } }
  }
  if (r.kind !== 'command') return fail('BAD_CONFIG', `${where}.kind: must be "dtr" or "command"`)
  const argv = r.argv
  if (!Array.isArray(argv) || argv.length === 0 || argv.length > 64)
    return fail('BAD_CONFIG', `${where}.argv: must be a list of 1 to 64 strings, the program first`)
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (typeof a !== 'string' || a.length > 4096 || a.includes('\0') || (i === 0 && a === ''))
      return fail('BAD_CONFIG', `${where}.argv[${i}]: must be a string (the program: not empty)`)
  }
  return { ok: true, value: { kind: 'command', argv: [...(argv as string[])] } }
}
