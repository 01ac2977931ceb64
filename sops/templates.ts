// `{{steps.N.path}}` and `{{calls.K.path}}` in the arguments of planned calls (sops/FORMAT.md, "Templates"),
// and `{{trigger.path}}`: the triggering payload (JSON when it parses), which the format lets step
// guards read as `$.trigger` but gives templates no way to reach — without it a deterministic step
// could never put the event's own fields (a slot, an amount) into a call or an attested record.
// Pure. The validator uses `scanTemplates` to check references; the engine uses `resolveArgs`
// when the step runs, so template text never reaches a tool.
import { fail, type Result } from '../errors/codes.ts'
import type { Json } from './types.ts'

export interface TemplateRef {
  /** `steps`: output of step `index` (1-based); `calls`: call `index` of the same step (0-based); `trigger`: the payload (index 0). */
  kind: 'steps' | 'calls' | 'trigger'
  index: number
  path: string[]
  /** The template as written, braces included. */
  raw: string
}

const VALID = /^\{\{\s*(?:(steps|calls)\.(\d+)|(trigger))((?:\.[^.\s{}]+)*)\s*\}\}$/
// Anything in double braces that starts with `steps`/`calls`: a candidate template. Other
// `{{…}}` text is left alone (it may be meant for the tool, e.g. a message template).
const CANDIDATE = /\{\{\s*(?:steps|calls|trigger)\b[^{}]*\}\}/g

function parseOne(raw: string): TemplateRef | undefined {
  const m = VALID.exec(raw)
  if (!m) return undefined
  const path = (m[4] ?? '').split('.').slice(1)
  if (m[3]) return { kind: 'trigger', index: 0, path, raw }
  return { kind: m[1] as 'steps' | 'calls', index: Number(m[2]), path, raw }
}

export interface TemplateScan {
  refs: TemplateRef[]
  /** Candidates that look like templates but cannot be parsed (`{{steps.x}}`, `{{calls}}`). */
  malformed: string[]
  /** `{{` never closed by `}}` (`{{steps.1.ms`, `{{steps.1.ms}`), from the `{{` on. */
  unclosed: string[]
}

const CLOSED = /\{\{[^{}]*\}\}/g

/**
 * The text from the first `{{` that no `}}` closes, or undefined. sops/RUNTIME.md, "Templates at run time": template
 * text that is not a complete reference is an error, so half a template never reaches a tool as
 * literal text. Closed pairs are removed (innermost first) until none is left; whatever `{{`
 * remains is unclosed. `{{{x}}}` (a tool's own triple braces) leaves only `{` and `}`.
 */
export function unclosedTemplate(s: string): string | undefined {
  if (!s.includes('{{')) return undefined
  let rest = s
  for (let prev = ''; prev !== rest; ) {
    prev = rest
    rest = rest.replace(CLOSED, '')
  }
  const at = rest.indexOf('{{')
  if (at < 0) return undefined
  const tail = rest.slice(at)
  return tail.length > 40 ? `${tail.slice(0, 40)}…` : tail
}

function eachString(args: Json, visit: (s: string) => void): void {
  if (typeof args === 'string') visit(args)
  else if (Array.isArray(args)) for (const v of args) eachString(v, visit)
  else if (args !== null && typeof args === 'object')
    for (const v of Object.values(args)) eachString(v, visit)
}

export function scanTemplates(args: Json): TemplateScan {
  const refs: TemplateRef[] = []
  const malformed: string[] = []
  const unclosed: string[] = []
  eachString(args, (s) => {
    const open = unclosedTemplate(s)
    if (open !== undefined) unclosed.push(open)
    for (const m of s.matchAll(CANDIDATE)) {
      const ref = parseOne(m[0])
      if (ref) refs.push(ref)
      else malformed.push(m[0])
    }
  })
  return { refs, malformed, unclosed }
}

/** Every well-formed template in the string values of `args` (keys are never templated). */
export function parseTemplates(args: Json): TemplateRef[] {
  return scanTemplates(args).refs
}

export interface TemplateScope {
  /** Output of each completed step, by 1-based step number. */
  steps: Readonly<Record<number, Json>>
  /** Outputs of the earlier calls of the running step, 0-based. */
  calls: readonly Json[]
  /** The trigger payload as step 1 receives it; absent where no run exists (validation). */
  trigger?: Json
}

// A template that names what is not there is the SOP author's to fix: BAD_INPUT throughout.
type Lookup = Result<{ value: Json }>

function lookup(ref: TemplateRef, scope: TemplateScope): Lookup {
  let base: Json | undefined
  if (ref.kind === 'steps') {
    if (!Object.hasOwn(scope.steps, ref.index)) {
      return fail(
        'BAD_INPUT',
        `${ref.raw}: step ${ref.index} has no output (it has not completed in this run)`,
      )
    }
    base = scope.steps[ref.index]
  } else if (ref.kind === 'trigger') {
    if (scope.trigger === undefined) return fail('BAD_INPUT', `${ref.raw}: this run has no trigger payload`)
    base = scope.trigger
  } else {
    if (ref.index >= scope.calls.length) {
      return fail(
        'BAD_INPUT',
        `${ref.raw}: call ${ref.index} has not run yet in this step (${scope.calls.length} earlier calls)`,
      )
    }
    base = scope.calls[ref.index]
  }
  let cur: Json | undefined = base
  for (let i = 0; i < ref.path.length; i++) {
    const seg = ref.path[i] as string
    if (Array.isArray(cur) && /^\d+$/.test(seg)) cur = cur[Number(seg)]
    else if (cur !== null && typeof cur === 'object' && !Array.isArray(cur) && Object.hasOwn(cur, seg))
      cur = cur[seg]
    else cur = undefined
    if (cur === undefined) {
      const where = ref.path.slice(0, i + 1).join('.')
      const of =
        ref.kind === 'trigger'
          ? 'the trigger payload'
          : `the output of ${ref.kind === 'steps' ? 'step' : 'call'} ${ref.index}`
      return fail('BAD_INPUT', `${ref.raw}: no "${where}" in ${of}`)
    }
  }
  return { ok: true, value: cur === undefined ? null : cur }
}

/** A string argument read once: an error, exactly one template, or text and templates in turn. */
type Compiled =
  | { kind: 'error'; error: string }
  | { kind: 'whole'; ref: TemplateRef }
  | { kind: 'parts'; parts: (string | TemplateRef | { error: string })[] }

function compileString(s: string): Compiled {
  const open = unclosedTemplate(s)
  if (open !== undefined) return { kind: 'error', error: `${open}: unclosed template ("{{" without "}}")` }
  const whole = parseOne(s)
  if (whole) return { kind: 'whole', ref: whole }
  const parts: (string | TemplateRef | { error: string })[] = []
  let at = 0
  for (const m of s.matchAll(CANDIDATE)) {
    if (m.index > at) parts.push(s.slice(at, m.index))
    // A malformed one is reported when reached, so an earlier failing lookup is named first.
    parts.push(
      parseOne(m[0]) ?? {
        error: `${m[0]}: malformed template (expected {{steps.N.path}}, {{calls.K.path}} or {{trigger.path}})`,
      },
    )
    at = m.index + m[0].length
  }
  if (at < s.length) parts.push(s.slice(at))
  return { kind: 'parts', parts }
}

/**
 * Argument strings already read, by text: a step's call arguments are the same strings at every
 * run, and reading them (three regular expressions each) was a visible share of a short run.
 * Bounded: past the cap, strings are read each time.
 */
const compiledStrings = new Map<string, Compiled>()
const MAX_COMPILED = 10_000

function resolveString(s: string, scope: TemplateScope): Lookup {
  let c = compiledStrings.get(s)
  if (c === undefined) {
    c = compileString(s)
    if (compiledStrings.size < MAX_COMPILED) compiledStrings.set(s, c)
  }
  if (c.kind === 'error') return fail('BAD_INPUT', c.error)
  // An argument that is exactly one template keeps the referenced JSON type.
  if (c.kind === 'whole') return lookup(c.ref, scope)
  let text = ''
  for (const part of c.parts) {
    if (typeof part === 'string') {
      text += part
      continue
    }
    if ('error' in part) return fail('BAD_INPUT', part.error)
    const found = lookup(part, scope)
    if (!found.ok) return found
    text += typeof found.value === 'string' ? found.value : JSON.stringify(found.value)
  }
  return { ok: true, value: text }
}

export function resolveArgs(args: Json, scope: TemplateScope): Lookup {
  if (typeof args === 'string') return resolveString(args, scope)
  if (Array.isArray(args)) {
    const out: Json[] = []
    for (const v of args) {
      const r = resolveArgs(v, scope)
      if (!r.ok) return r
      out.push(r.value)
    }
    return { ok: true, value: out }
  }
  if (args !== null && typeof args === 'object') {
    const out: { [key: string]: Json } = {}
    for (const [k, v] of Object.entries(args)) {
      const r = resolveArgs(v, scope)
      if (!r.ok) return r
      // defineProperty, not assignment: a "__proto__" key in JSON must stay an own property.
      Object.defineProperty(out, k, { value: r.value, enumerable: true, writable: true, configurable: true })
    }
    return { ok: true, value: out }
  }
  return { ok: true, value: args }
}
