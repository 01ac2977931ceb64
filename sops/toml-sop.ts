// SOP.toml → the `[sop]` settings and `[[triggers]]`. Pure: text in, values and located
// diagnostics out. Every field has its type, default and allowed values from sops/FORMAT.md, "Settings";
// unknown keys are errors (sops/FORMAT.md, "Settings").
import { parse as parseToml, TomlError } from 'smol-toml'
import { errorText } from '../errors/text.ts'
import { parseCondition } from './conditions.ts'
import { cronProblem } from './cron-check.ts'
import { tomlLines, type TableLines } from './toml-lines.ts'
import { filterError } from '../mqtt/topics.ts'
import {
  ADMISSION_POLICIES,
  type AdmissionPolicy,
  type Diagnostic,
  EXECUTION_MODES,
  type ExecutionMode,
  FS_EVENTS,
  type FsEvent,
  PRIORITIES,
  type Priority,
  TRIGGER_TYPES,
  type Trigger,
  type TriggerType,
} from './types.ts'

export interface SopSettings {
  name?: string
  description?: string
  version?: string
  priority: Priority
  executionMode: ExecutionMode
  cooldownSecs: number
  maxConcurrent: number
  admissionPolicy: AdmissionPolicy
  agent?: string
}

export interface TomlResult {
  settings: SopSettings
  triggers: Trigger[]
  diagnostics: Diagnostic[]
  /** Lines for later checks: `[sop]` header, its `name`, its `agent`. */
  lines: { sop: number; name: number; agent?: number }
  /** Type and header line of every trigger with a known type, valid or not (for the agent rule). */
  triggerTypes: Array<{ type: TriggerType; line: number }>
}

export const SOP_KEYS = [
  'name',
  'description',
  'version',
  'priority',
  'execution_mode',
  'cooldown_secs',
  'max_concurrent',
  'admission_policy',
  'agent',
] as const

/** Fields each trigger type takes besides `type` (sops/FORMAT.md, "Triggers"). */
export const TRIGGER_FIELDS: Record<TriggerType, { required: string[]; optional: string[] }> = {
  peripheral: { required: ['board', 'signal'], optional: ['condition'] },
  manual: { required: [], optional: [] },
  cron: { required: ['expression'], optional: [] },
  webhook: { required: ['path'], optional: [] },
  mqtt: { required: ['topic'], optional: ['condition'] },
  filesystem: { required: ['path'], optional: ['events', 'condition'] },
  channel: { required: ['channel'], optional: ['alias', 'condition'] },
  amqp: { required: ['routing_key'], optional: ['condition'] },
}

type Table = Record<string, unknown>
const isTable = (v: unknown): v is Table =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date)

function typeName(v: unknown): string {
  if (Array.isArray(v)) return 'an array'
  if (v instanceof Date) return 'a date'
  if (isTable(v)) return 'a table'
  if (typeof v === 'number') return Number.isInteger(v) ? 'an integer' : 'a float'
  if (typeof v === 'bigint') return 'an integer'
  return `a ${typeof v}`
}

/** AMQP topic exchange: dot-separated words; `*` and `#` are whole words. */
export function routingKeyProblem(key: string): string | undefined {
  if (key === '') return 'is empty'
  for (const w of key.split('.')) {
    if (w === '') return `has an empty word in "${key}"`
    if ((w.includes('*') || w.includes('#')) && w !== '*' && w !== '#')
      return `word "${w}": "*" and "#" must be whole words`
  }
  return undefined
}

export function parseSopToml(text: string, file: string): TomlResult {
  const diagnostics: Diagnostic[] = []
  const err = (line: number, message: string): void =>
    void diagnostics.push({ file, line, message, severity: 'error' })
  const settings: SopSettings = {
    priority: 'normal',
    executionMode: 'supervised',
    cooldownSecs: 0,
    maxConcurrent: 1,
    admissionPolicy: 'parallel',
  }
  const result: TomlResult = {
    settings,
    triggers: [],
    diagnostics,
    lines: { sop: 1, name: 1 },
    triggerTypes: [],
  }
  let doc: Table
  try {
    doc = parseToml(text) as Table
  } catch (e) {
    if (e instanceof TomlError) err(e.line || 1, `TOML syntax error: ${e.message.split('\n')[0]}`)
    else err(1, `TOML syntax error: ${errorText(e)}`)
    return result
  }
  const at = tomlLines(text)
  const keyLine = (t: TableLines | undefined, key: string): number => t?.keys.get(key) ?? t?.header ?? 1

  for (const key of Object.keys(doc)) {
    if (key === 'sop' || key === 'triggers') continue
    const line = at.tables.get(key)?.header ?? at.arrays.get(key)?.[0]?.header ?? keyLine(at.root, key)
    err(line, `unknown top-level key "${key}" (SOP.toml has a [sop] table and [[triggers]])`)
  }

  const sopLines = at.tables.get('sop')
  const sop = doc.sop
  if (sop === undefined) err(1, 'missing the [sop] table')
  else if (!isTable(sop))
    err(
      at.arrays.get('sop')?.[0]?.header ?? keyLine(at.root, 'sop'),
      `"sop" must be a table ([sop]), got ${typeName(sop)}`,
    )
  else {
    result.lines.sop = sopLines?.header ?? 1
    result.lines.name = keyLine(sopLines, 'name')
    readSettings(sop, sopLines, settings, err, result)
  }

  const triggers = doc.triggers
  if (triggers !== undefined) {
    const elements = at.arrays.get('triggers') ?? []
    // `[triggers]` (one table) is written at its header, `triggers = …` at its key: point there.
    if (!Array.isArray(triggers))
      err(
        tableHeader(at, 'triggers') ?? keyLine(at.root, 'triggers'),
        `"triggers" must be an array of tables ([[triggers]]), got ${typeName(triggers)}`,
      )
    else
      triggers.forEach((t, i) => {
        const lines = elements[i]
        const line = lines?.header ?? keyLine(at.root, 'triggers')
        if (!isTable(t)) return err(line, `trigger ${i + 1} must be a table, got ${typeName(t)}`)
        if (typeof t.type === 'string' && (TRIGGER_TYPES as readonly string[]).includes(t.type))
          result.triggerTypes.push({ type: t.type as TriggerType, line })
        const trig = readTrigger(t, i + 1, lines, file, err)
        if (trig) result.triggers.push(trig)
      })
  }
  return result
}

/** The first `[name]` or `[name.sub]` header, if the table is written as one. */
function tableHeader(at: ReturnType<typeof tomlLines>, name: string): number | undefined {
  let first: number | undefined
  for (const [key, t] of at.tables)
    if ((key === name || key.startsWith(`${name}.`)) && (first === undefined || t.header < first))
      first = t.header
  return first
}

function readSettings(
  sop: Table,
  lines: TableLines | undefined,
  s: SopSettings,
  err: (line: number, message: string) => void,
  result: TomlResult,
): void {
  const line = (k: string): number => lines?.keys.get(k) ?? lines?.header ?? 1
  for (const key of Object.keys(sop)) {
    if (!(SOP_KEYS as readonly string[]).includes(key))
      err(line(key), `unknown key "${key}" in [sop] (expected ${SOP_KEYS.join(', ')})`)
  }
  const str = (key: string, required: boolean): string | undefined => {
    const v = sop[key]
    if (v === undefined) {
      if (required) err(lines?.header ?? 1, `[sop] is missing "${key}" (a string)`)
      return undefined
    }
    if (typeof v !== 'string') {
      err(line(key), `"${key}" must be a string, got ${typeName(v)}`)
      return undefined
    }
    if (required && v.trim() === '') {
      err(line(key), `"${key}" is empty`)
      return undefined
    }
    return v
  }
  const oneOf = <T extends string>(key: string, allowed: readonly T[]): T | undefined => {
    const v = str(key, false)
    if (v === undefined) return undefined
    if (!(allowed as readonly string[]).includes(v)) {
      err(line(key), `"${key}" has unknown value "${v}" (expected ${allowed.join(', ')})`)
      return undefined
    }
    return v as T
  }
  const int = (key: string, min: number): number | undefined => {
    const v = sop[key]
    if (v === undefined) return undefined
    const n = typeof v === 'bigint' ? Number(v) : v
    if (typeof n !== 'number' || !Number.isInteger(n)) {
      err(line(key), `"${key}" must be an integer, got ${typeName(v)}`)
      return undefined
    }
    if (n < min) {
      err(line(key), `"${key}" must be at least ${min}, got ${n}`)
      return undefined
    }
    return n
  }
  s.name = str('name', true)?.trim()
  s.description = str('description', true)
  s.version = str('version', false)
  s.priority = oneOf('priority', PRIORITIES) ?? s.priority
  s.executionMode = oneOf('execution_mode', EXECUTION_MODES) ?? s.executionMode
  s.admissionPolicy = oneOf('admission_policy', ADMISSION_POLICIES) ?? s.admissionPolicy
  s.cooldownSecs = int('cooldown_secs', 0) ?? s.cooldownSecs
  s.maxConcurrent = int('max_concurrent', 1) ?? s.maxConcurrent
  const agent = str('agent', false)
  if (agent !== undefined) {
    if (agent.trim() === '') err(line('agent'), '"agent" is empty')
    else {
      s.agent = agent.trim()
      result.lines.agent = line('agent')
    }
  }
}

function readTrigger(
  t: Table,
  index: number,
  lines: TableLines | undefined,
  file: string,
  err: (line: number, message: string) => void,
): Trigger | undefined {
  const header = lines?.header ?? 1
  const line = (k: string): number => lines?.keys.get(k) ?? header
  const where = `trigger ${index}`
  const type = t.type
  if (type === undefined) {
    err(header, `${where} has no "type" (expected ${TRIGGER_TYPES.join(', ')})`)
    return undefined
  }
  if (typeof type !== 'string' || !(TRIGGER_TYPES as readonly string[]).includes(type)) {
    err(line('type'), `${where}: unknown type ${JSON.stringify(type)} (expected ${TRIGGER_TYPES.join(', ')})`)
    return undefined
  }
  const tt = type as TriggerType
  const fields = TRIGGER_FIELDS[tt]
  let ok = true
  for (const key of Object.keys(t)) {
    if (key === 'type' || fields.required.includes(key) || fields.optional.includes(key)) continue
    const known = [...fields.required, ...fields.optional]
    err(
      line(key),
      `${where} (${tt}): unknown key "${key}"${known.length ? ` (expected ${known.join(', ')})` : ' (a manual trigger takes no fields)'}`,
    )
    ok = false
  }
  const str = (key: string): string | undefined => {
    const v = t[key]
    if (v === undefined) {
      if (fields.required.includes(key)) {
        err(header, `${where} (${tt}) is missing "${key}"`)
        ok = false
      }
      return undefined
    }
    if (typeof v !== 'string') {
      err(line(key), `${where} (${tt}): "${key}" must be a string, got ${typeName(v)}`)
      ok = false
      return undefined
    }
    if (fields.required.includes(key) && v.trim() === '') {
      err(line(key), `${where} (${tt}): "${key}" is empty`)
      ok = false
      return undefined
    }
    return v
  }
  const condition = (): string => {
    const c = str('condition') ?? ''
    const parsed = parseCondition(c)
    if (!parsed.ok) {
      err(line('condition'), `${where} (${tt}): cannot parse condition "${c}": ${parsed.error}`)
      ok = false
    }
    return c
  }
  const origin = { file, line: header }
  let trigger: Trigger | undefined
  switch (tt) {
    case 'manual':
      trigger = { type: 'manual', origin }
      break
    case 'peripheral': {
      const board = str('board')
      const signal = str('signal')
      for (const [k, v] of [
        ['board', board],
        ['signal', signal],
      ] as const) {
        if (v !== undefined && /[/+#\s]/.test(v)) {
          err(
            line(k),
            `${where} (peripheral): "${k}" "${v}" may not contain "/", "+", "#" or spaces (it is an MQTT topic level)`,
          )
          ok = false
        }
      }
      trigger = {
        type: 'peripheral',
        board: board ?? '',
        signal: signal ?? '',
        condition: condition(),
        origin,
      }
      break
    }
    case 'cron': {
      const expression = str('expression')
      if (expression !== undefined) {
        const problem = cronProblem(expression)
        if (problem) {
          err(line('expression'), `${where} (cron): bad cron expression "${expression}": ${problem}`)
          ok = false
        }
      }
      trigger = { type: 'cron', expression: expression ?? '', origin }
      break
    }
    case 'webhook': {
      const path = str('path')
      if (path !== undefined && (!path.startsWith('/') || /[\s?#]/.test(path))) {
        err(
          line('path'),
          `${where} (webhook): path "${path}" must start with "/" and hold no spaces, "?" or "#"`,
        )
        ok = false
      }
      trigger = { type: 'webhook', path: path ?? '', origin }
      break
    }
    case 'mqtt': {
      const topic = str('topic')
      const problem = topic === undefined ? null : filterError(topic)
      if (problem) {
        err(line('topic'), `${where} (mqtt): topic "${topic}" ${problem}`)
        ok = false
      }
      trigger = { type: 'mqtt', topic: topic ?? '', condition: condition(), origin }
      break
    }
    case 'filesystem': {
      const path = str('path')
      const events: FsEvent[] = []
      const ev = t.events
      if (ev !== undefined) {
        if (!Array.isArray(ev)) {
          err(line('events'), `${where} (filesystem): "events" must be an array of ${FS_EVENTS.join(', ')}`)
          ok = false
        } else
          for (const e of ev) {
            if (typeof e === 'string' && (FS_EVENTS as readonly string[]).includes(e)) {
              if (!events.includes(e as FsEvent)) events.push(e as FsEvent)
            } else {
              err(
                line('events'),
                `${where} (filesystem): unknown event ${JSON.stringify(e)} (expected ${FS_EVENTS.join(', ')})`,
              )
              ok = false
            }
          }
      }
      trigger = { type: 'filesystem', path: path ?? '', events, condition: condition(), origin }
      break
    }
    case 'channel': {
      const channel = str('channel')
      const alias = str('alias')
      trigger = { type: 'channel', channel: channel ?? '', condition: condition(), origin }
      if (alias !== undefined) trigger.alias = alias
      break
    }
    case 'amqp': {
      const key = str('routing_key')
      const problem = key === undefined ? undefined : routingKeyProblem(key)
      if (problem) {
        err(line('routing_key'), `${where} (amqp): routing_key ${problem}`)
        ok = false
      }
      trigger = { type: 'amqp', routing_key: key ?? '', condition: condition(), origin }
      break
    }
  }
  return ok ? trigger : undefined
}
