// The logger every hub part takes: pino's, narrowed to what we call, so tests can pass a
// silent pino or a recorder.
import { pino, type Logger, type LevelWithSilent } from 'pino'

export type Log = Pick<Logger, 'info' | 'warn' | 'error' | 'debug'>

export function createLog(level: LevelWithSilent = 'info'): Logger {
  return pino({ level, base: { svc: 'hub' } })
}

export const silentLog: Log = pino({ level: 'silent' })
