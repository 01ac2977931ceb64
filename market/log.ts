// The market's logger: pino on stderr, as the hub's (hub/log.ts), so a failure the market answers
// 5xx is in its log with the error, whether it runs as `svc market`, `svc attestor` or in `svc start`.
import { type LevelWithSilent, type Logger, pino } from 'pino'

export function createMarketLog(level: LevelWithSilent = 'info'): Logger {
  return pino({ level, base: { svc: 'market' } })
}
