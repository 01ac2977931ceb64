// SOP.md → steps. Pure: takes the text and its file name, returns steps and located diagnostics.
// micromark finds the `## Steps` section and each numbered item (md-outline.ts); the lines of an
// item are then read as title, body and property bullets (sops/FORMAT.md, "Reading the steps" and "Step bullets").
import { fail, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import { parseCondition } from './conditions.ts'
import { outline } from './md-outline.ts'
import { blankStep } from './blank-step.ts'
import {
  type Contract,
  type Diagnostic,
  EXECUTION_MODES,
  type ExecutionMode,
  type Json,
  type OnFailure,
  type PlannedCall,
  STEP_KINDS,
  type Step,
  type StepKind,
  type SwitchPort,
} from './types.ts'

/** Canonical bullet keys (`-` and `_` are the same: sops/FORMAT.md, "Reading the steps"). */
export const STEP_KEYS = [
  'tools',
  'allow_tools',
  'deny_tools',
  'requires_confirmation',
  'kind',
  'call',
  'input',
  'output',
  'when',
  'next',
  'switch',
  'depends_on',
  'terminal',
  'on_failure',
  'mode',
  'agent',
  'prompt',
  'decide',
  'unless_decided',
] as const
export type StepKey = (typeof STEP_KEYS)[number]
const KEY_SET: ReadonlySet<string> = new Set(STEP_KEYS)

export interface StepsResult {
  steps: Step[]
  diagnostics: Diagnostic[]
  /** Line of the `## Steps` heading (1 when missing). */
  stepsLine: number
}

interface Bullet {
  key: StepKey
  value: string
  line: number
}

const BULLET = /^(\s*)[-*+]\s+(.*)$/
const KEYED = /^([A-Za-z][A-Za-z_-]*)\s*:\s*(.*)$/s
const TITLE_BOLD = /^(\*\*|__)(.+?)\1/

function leadingSpaces(line: string): number {
  const m = /^[ \t]*/.exec(line)
  return m ? m[0].replace(/\t/g, '    ').length : 0
}

export function parseStepsMarkdown(text: string, file: string): StepsResult {
  const diagnostics: Diagnostic[] = []
  const err = (line: number, message: string): void =>
    void diagnostics.push({ file, line, message, severity: 'error' })
  const warn = (line: number, message: string): void =>
    void diagnostics.push({ file, line, message, severity: 'warning' })
  const o = outline(text)
  if (!o.steps) {
    err(1, 'no "## Steps" section (SOP.md must contain a "## Steps" heading followed by numbered steps)')
    return { steps: [], diagnostics, stepsLine: 1 }
  }
  for (const extra of o.stepsHeadings.slice(1))
    err(extra.line, `a second "## Steps" section (the first is at line ${o.steps.line}); only one is read`)
  // sops/FORMAT.md, "Reading the steps": a line that cannot be attached to a step is an error, never dropped.
  for (const line of o.strayBullets)
    err(
      line,
      'bullet before the first step belongs to no step (steps are numbered items: "1. **Title** …"; put it under one)',
    )
  if (o.items.length === 0) {
    err(o.steps.line, '"## Steps" has no numbered steps')
    return { steps: [], diagnostics, stepsLine: o.steps.line }
  }
  // Steps are numbered by position (sops/FORMAT.md, "Reading the steps"). Lists written `1. 1. 1.` are fine; numbers that
  // disagree with positions (`1. 2. 4.`) mislead anyone writing `next: 4`, so say so once.
  const allSame = o.items.every((it) => it.written === o.items[0]?.written)
  const off = allSame ? undefined : o.items.find((it, i) => it.written !== i + 1)
  if (off)
    warn(
      off.start,
      `this item is written as ${off.written}. but is step ${o.items.indexOf(off) + 1} (steps are numbered by position; next/goto/depends_on use positions)`,
    )
  const lines = text.split(/\r?\n/)
  const steps = o.items.map((item, i) => readStep(i + 1, item, lines, o.codeLines, file, err))
  return { steps, diagnostics, stepsLine: o.steps.line }
}

function readStep(
  number: number,
  item: { start: number; end: number; contentColumn: number },
  lines: string[],
  codeLines: ReadonlySet<number>,
  file: string,
  err: (line: number, message: string) => void,
): Step {
  const first = (lines[item.start - 1] ?? '').slice(item.contentColumn - 1).trim()
  let title = first
  let bodyFirst = ''
  const bold = TITLE_BOLD.exec(first)
  if (bold) {
    // sops/FORMAT.md, "Reading the steps": the title is the bold text as written (`**Check:**` is "Check:"), and
    // only a separator `—`, `–` or `-` after it is dropped, as the origin does; `**Inspect**: x`
    // keeps ": x" as its body.
    title = bold[2] ?? ''
    bodyFirst = first
      .slice(bold[0].length)
      .trim()
      .replace(/^([—–]|-(?!-))\s*/, '')
  }
  const body: string[] = bodyFirst ? [bodyFirst] : []
  const bullets: Bullet[] = []
  let open: { bullet?: Bullet; indent: number; bodyIndex?: number } | undefined
  for (let n = item.start + 1; n <= item.end; n++) {
    const raw = lines[n - 1] ?? ''
    if (raw.trim() === '') {
      open = undefined
      continue
    }
    const indent = leadingSpaces(raw)
    const m = codeLines.has(n) ? null : BULLET.exec(raw)
    if (!m) {
      // A line indented under an open bullet continues its value (multi-line JSON, long prompts).
      if (open && indent > open.indent && !codeLines.has(n)) {
        if (open.bullet) open.bullet.value += '\n' + raw.trim()
        else if (open.bodyIndex !== undefined) body[open.bodyIndex] += ' ' + raw.trim()
        continue
      }
      open = undefined
      body.push(codeLines.has(n) ? raw.slice(Math.min(indent, item.contentColumn - 1)) : raw.trim())
      continue
    }
    const content = (m[2] ?? '').trim()
    const keyed = KEYED.exec(content)
    const key = keyed ? (keyed[1] ?? '').toLowerCase().replace(/-/g, '_') : ''
    if (keyed && KEY_SET.has(key)) {
      const bullet: Bullet = { key: key as StepKey, value: (keyed[2] ?? '').trim(), line: n }
      bullets.push(bullet)
      open = { bullet, indent }
    } else {
      // Spec: any other sub-bullet is added to the step body as instructions.
      body.push(content)
      open = { indent, bodyIndex: body.length - 1 }
    }
  }
  const step = blankStep(number, title, { file, line: item.start }, { body: body.join('\n') })
  if (title.trim() === '') err(item.start, `step ${number} has no title`)
  for (const b of bullets) applyBullet(step, b, file, err)
  return step
}

function toolList(
  value: string,
  key: string,
  line: number,
  err: (line: number, message: string) => void,
): string[] {
  const names = value.split(',').map((s) => s.trim())
  if (names.length === 1 && names[0] === '') {
    err(line, `${key}: is empty (expected comma-separated tool names)`)
    return []
  }
  const out: string[] = []
  for (const name of names) {
    if (name === '') err(line, `${key}: has an empty entry in "${value}"`)
    else if (!/^[A-Za-z0-9_.:-]+$/.test(name)) err(line, `${key}: "${name}" is not a tool name`)
    else out.push(name)
  }
  return out
}

function boolValue(
  value: string,
  key: string,
  line: number,
  err: (line: number, message: string) => void,
): boolean {
  if (value === 'true') return true
  if (value === 'false') return false
  err(line, `${key}: must be true or false, got "${value}"`)
  return false
}

function stepNumber(
  value: string,
  what: string,
  line: number,
  err: (line: number, message: string) => void,
): number | undefined {
  if (/^\d+$/.test(value) && Number(value) >= 1) return Number(value)
  err(line, `${what}: "${value}" is not a step number (steps are numbered from 1)`)
  return undefined
}

/** JSON-Schema-like: an object whose `type`, `properties`, `required` and `items` are well formed. */
export function contractProblem(schema: Json, at = ''): string | undefined {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema))
    return `${at || 'contract'} must be a JSON object`
  const types = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']
  const t = schema.type
  if (t !== undefined) {
    const list = Array.isArray(t) ? t : [t]
    for (const one of list)
      if (typeof one !== 'string' || !types.includes(one))
        return `${at || 'contract'}: unknown type ${JSON.stringify(one)} (expected ${types.join(', ')})`
  }
  if (
    schema.required !== undefined &&
    (!Array.isArray(schema.required) || schema.required.some((r) => typeof r !== 'string'))
  )
    return `${at || 'contract'}: "required" must be a list of property names`
  if (schema.properties !== undefined) {
    const props = schema.properties
    if (props === null || typeof props !== 'object' || Array.isArray(props))
      return `${at || 'contract'}: "properties" must be an object`
    for (const [k, v] of Object.entries(props)) {
      const p = contractProblem(v, `${at}${at ? '.' : ''}properties.${k}`)
      if (p) return p
    }
  }
  if (schema.items !== undefined) {
    const p = contractProblem(schema.items, `${at}${at ? '.' : ''}items`)
    if (p) return p
  }
  return undefined
}

function parseJson(value: string): Result<{ value: Json }> {
  try {
    return { ok: true, value: JSON.parse(value) as Json }
  } catch (e) {
    return fail('BAD_INPUT', errorText(e))
  }
}

function applyBullet(
  step: Step,
  b: Bullet,
  file: string,
  err: (line: number, message: string) => void,
): void {
  const { key, value, line } = b
  const label = `${key}`
  if (key !== 'call' && step.lines[key] !== undefined) {
    err(line, `duplicate "${key}:" in step ${step.number} (first at line ${step.lines[key]})`)
    return
  }
  if (key !== 'call') step.lines[key] = line
  else if (step.lines.call === undefined) step.lines.call = line
  switch (key) {
    case 'tools':
      step.tools = toolList(value, label, line, err)
      return
    case 'allow_tools':
      step.allowTools = toolList(value, 'allow-tools', line, err)
      return
    case 'deny_tools':
      step.denyTools = toolList(value, 'deny-tools', line, err)
      return
    case 'requires_confirmation':
      step.requiresConfirmation = boolValue(value, label, line, err)
      return
    case 'terminal':
      step.terminal = boolValue(value, label, line, err)
      return
    case 'kind':
      if ((STEP_KINDS as readonly string[]).includes(value)) step.kind = value as StepKind
      else err(line, `kind: unknown value "${value}" (expected ${STEP_KINDS.join(', ')})`)
      return
    case 'mode':
      if ((EXECUTION_MODES as readonly string[]).includes(value)) step.mode = value as ExecutionMode
      else err(line, `mode: unknown value "${value}" (expected ${EXECUTION_MODES.join(', ')})`)
      return
    case 'call': {
      const parsed = parseJson(value)
      if (!parsed.ok) return err(line, `call: is not valid JSON (${parsed.error})`)
      const v = parsed.value
      if (v === null || typeof v !== 'object' || Array.isArray(v))
        return err(line, 'call: must be a JSON object with "tool" and "args"')
      const extra = Object.keys(v).filter((k) => k !== 'tool' && k !== 'args')
      if (extra.length > 0)
        return err(
          line,
          `call: unknown field ${extra.map((k) => `"${k}"`).join(', ')} (a call has only "tool" and "args")`,
        )
      if (typeof v.tool !== 'string' || v.tool.trim() === '')
        return err(line, 'call: "tool" must be a non-empty string')
      if (!('args' in v))
        return err(line, `call: missing "args" (use "args": {} for a tool without arguments)`)
      if (v.args === null || typeof v.args !== 'object' || Array.isArray(v.args))
        return err(line, 'call: "args" must be a JSON object')
      const call: PlannedCall = { tool: v.tool, args: v.args ?? {}, origin: { file, line } }
      step.calls.push(call)
      return
    }
    case 'input':
    case 'output': {
      const parsed = parseJson(value)
      if (!parsed.ok) return err(line, `${key}: is not valid JSON (${parsed.error})`)
      const problem = contractProblem(parsed.value)
      if (problem) return err(line, `${key}: ${problem}`)
      step[key] = parsed.value as Contract
      return
    }
    case 'when': {
      const c = parseCondition(value)
      if (!c.ok) return err(line, `when: cannot parse condition "${value}": ${c.error}`)
      if (value.trim() === '') return err(line, 'when: is empty (omit it to always run the step)')
      step.when = value
      return
    }
    case 'next': {
      const n = stepNumber(value, 'next', line, err)
      if (n !== undefined) step.next = n
      return
    }
    case 'unless_decided': {
      const n = stepNumber(value, 'unless_decided', line, err)
      if (n !== undefined) step.unlessDecided = n
      return
    }
    case 'depends_on': {
      const parts = value.split(',').map((s) => s.trim())
      for (const p of parts) {
        const n = stepNumber(p, 'depends_on', line, err)
        if (n !== undefined && !step.dependsOn.includes(n)) step.dependsOn.push(n)
      }
      return
    }
    case 'on_failure': {
      const f = parseOnFailure(value)
      if (typeof f === 'string') err(line, `on_failure: ${f}`)
      else step.onFailure = f
      return
    }
    case 'switch':
      step.switch = parseSwitch(value, line, err)
      return
    case 'agent':
    case 'prompt':
    case 'decide':
      if (value === '') return err(line, `${key}: is empty`)
      step[key] = value
      return
  }
}

export function parseOnFailure(value: string): OnFailure | string {
  const v = value.trim()
  if (v === 'fail') return { kind: 'fail' }
  const m = /^(retry|goto)\s*:\s*(\S*)$/.exec(v)
  if (!m) return `unknown value "${value}" (expected fail, retry:<count> or goto:<step>)`
  const n = m[2] ?? ''
  if (!/^\d+$/.test(n) || Number(n) < 1)
    return `"${value}": ${m[1] === 'retry' ? 'the retry count' : 'the step'} must be a whole number from 1`
  return m[1] === 'retry' ? { kind: 'retry', count: Number(n) } : { kind: 'goto', step: Number(n) }
}

/** sops/FORMAT.md, "Switch ports": ports split at the first `>` (name) and the last `>` (target), so conditions may hold `>`. */
export function parseSwitch(
  value: string,
  line: number,
  err: (line: number, message: string) => void,
): SwitchPort[] {
  const ports: SwitchPort[] = []
  const parts = value.split(';').map((s) => s.trim())
  if (parts.every((p) => p === '')) {
    err(line, 'switch: has no ports (expected name>condition>step; …)')
    return ports
  }
  parts.forEach((part, i) => {
    if (part === '') return
    const first = part.indexOf('>')
    const last = part.lastIndexOf('>')
    if (first < 0 || first === last)
      return err(line, `switch: port ${i + 1} "${part}" is not name>condition>step`)
    const name = part.slice(0, first).trim()
    const condition = part.slice(first + 1, last).trim()
    const targetText = part.slice(last + 1).trim()
    if (name === '') return err(line, `switch: port ${i + 1} "${part}" has no name`)
    if (!/^[A-Za-z0-9_.-]+$/.test(name))
      return err(line, `switch: port name "${name}" may hold only letters, digits, "_", "-" and "."`)
    if (ports.some((p) => p.name === name)) return err(line, `switch: port name "${name}" is used twice`)
    const c = parseCondition(condition)
    if (!c.ok) return err(line, `switch: port "${name}" condition "${condition}": ${c.error}`)
    let target: number | null = null
    if (targetText !== '') {
      if (!/^\d+$/.test(targetText) || Number(targetText) < 1)
        return err(line, `switch: port "${name}" target "${targetText}" is not a step number`)
      target = Number(targetText)
    }
    ports.push({ name, condition, target })
  })
  return ports
}
