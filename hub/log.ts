// The hub's logging: pino, started here, and the one logger shape every part takes (declared
// by the bridge, the lowest layer), so tests can pass a silent pino or a recorder.
import { pino, type Logger, type LevelWithSilent } from 'pino'
import type { Log } from '../bridge/types.ts'

export type { Log }

export function createLog(level: LevelWithSilent = 'info'): Logger {
  return pino({ level, base: { svc: 'hub' } })
}

export const silentLog: Log = pino({ level: 'silent' })
