// The flags of `svc sop <run command>` (sop-runs.ts, sop-history.ts): one parser, each command
// naming the flags it takes, so an unknown or misplaced flag is a usage error naming it.
import { UsageError } from './io.ts'
import { errorText } from '../errors/text.ts'

export interface Flags {
  positional: string[]
  json: boolean
  by?: string
  note?: string
  payload?: string
  approveAll: boolean
  sopsDir?: string
  agentUrl?: string
  agentModel?: string
  decide: Record<number, boolean>
  sop?: string
  state?: string
  since?: string
  until?: string
  limit?: number
  cursor?: string
}

const VALUE_FLAGS = new Set([
  '--by',
  '--note',
  '--payload',
  '--sops-dir',
  '--agent-url',
  '--agent-model',
  '--decide',
  '--sop',
  '--state',
  '--since',
  '--until',
  '--limit',
  '--cursor',
])

export function parseFlags(sub: string, argv: string[], allowed: string[], help: string): Flags {
  const f: Flags = { positional: [], json: false, approveAll: false, decide: {} }
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i]!
    let value: string | undefined
    const eq = a.indexOf('=')
    if (a.startsWith('--') && eq > 0 && VALUE_FLAGS.has(a.slice(0, eq))) {
      value = a.slice(eq + 1)
      a = a.slice(0, eq)
    }
    if (a === '--help' || a === '-h') throw new UsageError(help)
    if (!a.startsWith('-') || a === '-') {
      f.positional.push(a)
      continue
    }
    if (!allowed.includes(a))
      throw new UsageError(`unknown option "${a}" for "sop ${sub}" (see svc sop ${sub} --help)`)
    if (a === '--json') f.json = true
    else if (a === '--approve-all') f.approveAll = true
    else {
      value ??= argv[++i]
      if (value === undefined || value === '') throw new UsageError(`${a} needs a value`)
      if (a === '--decide') {
        const m = /^(\d+)=(yes|no|true|false)$/i.exec(value)
        if (!m) throw new UsageError(`--decide takes STEP=yes|no (got "${value}")`)
        f.decide[Number(m[1])] = /^(yes|true)$/i.test(m[2]!)
      } else if (a === '--limit') {
        if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > 1000)
          throw new UsageError(`--limit takes a whole number from 1 to 1000 (got "${value}")`)
        f.limit = Number(value)
      } else if (a === '--by') f.by = value
      else if (a === '--note') f.note = value
      else if (a === '--payload') f.payload = value
      else if (a === '--sops-dir') f.sopsDir = value
      else if (a === '--agent-url') f.agentUrl = value
      else if (a === '--agent-model') f.agentModel = value
      else if (a === '--sop') f.sop = value
      else if (a === '--state') f.state = value
      else if (a === '--since') f.since = value
      else if (a === '--until') f.until = value
      else if (a === '--cursor') f.cursor = value
    }
  }
  return f
}

export function one(sub: string, f: Flags, what: string): string {
  if (f.positional.length !== 1)
    throw new UsageError(`sop ${sub} takes exactly one ${what} (got ${f.positional.length})`)
  return f.positional[0]!
}

/** `--payload JSON`, parsed; not JSON is a usage error naming the flag and the parser's complaint. */
export function payloadFlag(f: Flags): unknown {
  if (f.payload === undefined) return {}
  try {
    return JSON.parse(f.payload)
  } catch (e) {
    throw new UsageError(`--payload is not JSON: ${errorText(e)}`)
  }
}
