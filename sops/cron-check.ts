// Cron triggers take a five-field expression (minute hour day-of-month month day-of-week).
// cron-parser checks the values; the field count is checked here because cron-parser also
// accepts six fields (seconds) and `@daily`-style macros, which the format does not allow (sops/FORMAT.md, "Triggers").
import { CronExpressionParser } from 'cron-parser'
import { errorText } from '../errors/text.ts'

export function cronProblem(expression: string): string | undefined {
  const fields = expression
    .trim()
    .split(/\s+/)
    .filter((f) => f !== '')
  if (fields.length !== 5)
    return `expected five fields (minute hour day-of-month month day-of-week), got ${fields.length}`
  try {
    CronExpressionParser.parse(fields.join(' '), { strict: false })
  } catch (e) {
    return errorText(e)
  }
  return undefined
}
