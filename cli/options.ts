// Option parsing for every `svc` command: node's parseArgs in strict mode, with its errors
// turned into one-line usage errors.
import { parseArgs } from 'node:util'
import { UsageError } from './io.ts'
import { errorText } from '../errors/text.ts'

export type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>

export function parseOptions<T extends OptionSpec>(argv: string[], spec: T, help: string) {
  try {
    return parseArgs({ args: argv, options: spec, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError(`${errorText(err).split('\n')[0]} (see ${help})`)
  }
}

/** A whole number option, or a usage error naming the option. */
export function intOption(value: string | undefined, name: string, min = 0): number | undefined {
  if (value === undefined) return undefined
  if (!/^\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${name} must be a whole number${min > 0 ? ` from ${min}` : ''} (got "${value}")`)
  }
  return Number(value)
}
