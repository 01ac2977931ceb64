// A real pino logger whose lines the test reads: what a server logged, parsed, in order.
import { type Logger, pino } from 'pino'

export interface LogLine {
  level: number
  msg: string
  err?: { type: string; message: string; stack: string }
  [k: string]: unknown
}

export function logLines(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = []
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) })
  return { log, lines }
}
