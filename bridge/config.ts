// Checks `[[boards]]` entries before anything opens. Errors say which board and which field.
import { Compile } from 'typebox/compile'
import { type Failure, fail } from '../errors/codes.ts'
import { DEFAULT_LINE_CAP, NAME_RE } from './codec/index.ts'
import { FirmataProfile } from './firmata/profile.ts'
import type { BoardConfig } from './types.ts'

const checkProfile = Compile(FirmataProfile)

/** `[[boards]]` comes from hub.toml: a refusal is the operator's configuration (BAD_CONFIG). */
export type ConfigCheck = { ok: true } | Failure<'BAD_CONFIG'>

const BAUDS = new Set([
  300, 1200, 2400, 4800, 9600, 14400, 19200, 28800, 38400, 57600, 74880, 115200, 230400, 250000, 460800,
  500000, 921600, 1000000, 2000000,
])

export function checkBoardConfigs(boards: readonly BoardConfig[]): ConfigCheck {
  if (!Array.isArray(boards)) return fail('BAD_CONFIG', 'boards: must be an array')
  const names = new Set<string>()
  const ports = new Set<string>()
  for (const [i, b] of boards.entries()) {
    const where = `boards[${i}]${typeof b?.name === 'string' ? ` (${b.name})` : ''}`
    if (typeof b !== 'object' || b === null) return fail('BAD_CONFIG', `${where}: must be a table`)
    if (typeof b.name !== 'string' || !NAME_RE.test(b.name))
      return fail(
        'BAD_CONFIG',
        `${where}.name: must match [A-Za-z0-9_.-]{1,64} (it becomes an MQTT topic level)`,
      )
    if (names.has(b.name)) return fail('BAD_CONFIG', `${where}.name: duplicate board name`)
    names.add(b.name)
    if (typeof b.port !== 'string' || b.port.length === 0)
      return fail('BAD_CONFIG', `${where}.port: must be a non-empty path`)
    if (ports.has(b.port))
      return fail('BAD_CONFIG', `${where}.port: ${b.port} is already used by another board`)
    ports.add(b.port)
    if (b.baud !== undefined && !BAUDS.has(b.baud))
      return fail('BAD_CONFIG', `${where}.baud: ${String(b.baud)} is not a standard baud rate`)
    if (b.lineCap !== undefined && (!Number.isInteger(b.lineCap) || b.lineCap < 16 || b.lineCap > 1 << 20)) {
      return fail(
        'BAD_CONFIG',
        `${where}.lineCap: must be an integer from 16 to 1048576 (default ${DEFAULT_LINE_CAP})`,
      )
    }
    if (
      b.heartbeatMs !== undefined &&
      (!Number.isInteger(b.heartbeatMs) || b.heartbeatMs < 0 || (b.heartbeatMs > 0 && b.heartbeatMs < 50))
    ) {
      return fail('BAD_CONFIG', `${where}.heartbeatMs: must be 0 (off) or an integer ≥ 50`)
    }
    const kind = b.kind ?? 'serial'
    if (kind !== 'serial' && kind !== 'firmata')
      return fail('BAD_CONFIG', `${where}.kind: must be "serial" or "firmata"`)
    if (kind === 'firmata') {
      if (b.profile === undefined)
        return fail('BAD_CONFIG', `${where}.profile: a firmata board needs a profile`)
      if (!checkProfile.Check(b.profile)) {
        const e = [...checkProfile.Errors(b.profile)][0]
        return fail('BAD_CONFIG', `${where}.profile${e?.instancePath ?? ''}: ${e?.message ?? 'invalid'}`)
      }
      if (b.simulate) return fail('BAD_CONFIG', `${where}.simulate: only serial boards can be simulated`)
    }
    if (
      b.simulate !== undefined &&
      typeof b.simulate !== 'boolean' &&
      (typeof b.simulate !== 'object' || b.simulate === null)
    ) {
      return fail('BAD_CONFIG', `${where}.simulate: must be true/false or simulator options`)
    }
    if (
      typeof b.simulate === 'object' &&
      b.simulate.rate !== undefined &&
      !(Number.isFinite(b.simulate.rate) && b.simulate.rate >= 0 && b.simulate.rate <= 100_000)
    ) {
      return fail('BAD_CONFIG', `${where}.simulate.rate: must be 0 to 100000 events/s`)
    }
  }
  return { ok: true }
}
