// Checks that need the whole SOP: step references, depends_on cycles, templates, the agent rule,
// tool names, deterministic steps without calls. Pure; every diagnostic is located.
import { parseCondition } from './conditions.ts'
import { isKnownTool } from './known-tools.ts'
import { scanTemplates } from './templates.ts'
import type { Diagnostic, Sop, Step } from './types.ts'

export interface ValidateLines {
  /** `[sop]` header line, and `agent =` line if present. */
  sop: number
  agent?: number
}

export function validateSop(
  sop: Sop,
  lines: ValidateLines,
  triggerTypes: ReadonlyArray<{ type: string; line: number }> = sop.triggers.map((t) => ({
    type: t.type,
    line: t.origin.line,
  })),
): Diagnostic[] {
  const out: Diagnostic[] = []
  const md = sop.mdPath
  const err = (file: string, line: number, message: string): void =>
    void out.push({ file, line, message, severity: 'error' })
  const warn = (file: string, line: number, message: string): void =>
    void out.push({ file, line, message, severity: 'warning' })
  const count = sop.steps.length
  const exists = (n: number): boolean => n >= 1 && n <= count
  const byNumber = new Map(sop.steps.map((s) => [s.number, s]))
  const range = count === 1 ? 'the only step is 1' : `steps are 1..${count}`

  // Spec: agent is required when any trigger other than manual can start the SOP.
  const auto = triggerTypes.find((t) => t.type !== 'manual')
  if (auto && !sop.agent)
    err(
      sop.tomlPath,
      lines.sop,
      `"agent" is required: trigger at line ${auto.line} is ${auto.type}, not manual (set agent = "<alias>" in [sop])`,
    )

  for (const step of sop.steps) {
    const at = (key: string): number => step.lines[key] ?? step.origin.line
    const ref = (target: number, what: string, key: string): void => {
      if (!exists(target))
        err(
          md,
          at(key),
          `${what}: step ${step.number} refers to step ${target}, which does not exist (${range})`,
        )
    }
    if (step.next !== undefined) ref(step.next, 'next', 'next')
    if (step.onFailure.kind === 'goto') ref(step.onFailure.step, 'on_failure goto', 'on_failure')
    for (const port of step.switch)
      if (port.target !== null) ref(port.target, `switch port "${port.name}"`, 'switch')
    for (const d of step.dependsOn) {
      if (d === step.number) err(md, at('depends_on'), `depends_on: step ${step.number} depends on itself`)
      else ref(d, 'depends_on', 'depends_on')
    }
    if (step.unlessDecided !== undefined) {
      ref(step.unlessDecided, 'unless_decided', 'unless_decided')
      const target = byNumber.get(step.unlessDecided)
      if (target && target.decide === undefined)
        err(
          md,
          at('unless_decided'),
          `unless_decided: step ${step.unlessDecided} asks no question (it has no "decide:")`,
        )
      if (step.unlessDecided === step.number)
        err(md, at('unless_decided'), `unless_decided: step ${step.number} refers to itself`)
    }
    checkGuards(step, md, exists, range, err)
    checkCalls(step, md, sop, err, warn)
    checkRouting(step, md, err, warn)
  }
  checkCycles(sop.steps, md, err)
  return out
}

/**
 * sops/FORMAT.md, "What the validator checks": `terminal: true` says the run finishes after the
 * step, so a `next:` or `switch:` beside it contradicts it: an error, not a silent choice.
 * `when:` is read after the step runs and guards only its `next:`/`switch:`; without either,
 * true and false route alike (to the next step in order, or to the end when terminal).
 */
function checkRouting(
  step: Step,
  md: string,
  err: (f: string, l: number, m: string) => void,
  warn: (f: string, l: number, m: string) => void,
): void {
  if (step.terminal) {
    const terminalLine = step.lines.terminal ?? step.origin.line
    if (step.next !== undefined)
      err(
        md,
        terminalLine,
        `terminal: step ${step.number} is terminal but also has "next: ${step.next}" (line ${step.lines.next ?? step.origin.line}); a terminal step ends the run, so keep one of them`,
      )
    if (step.switch.length > 0)
      err(
        md,
        terminalLine,
        `terminal: step ${step.number} is terminal but also has "switch:" (line ${step.lines.switch ?? step.origin.line}); a terminal step ends the run, so keep one of them`,
      )
  }
  if (step.when !== undefined && step.next === undefined && step.switch.length === 0)
    warn(
      md,
      step.lines.when ?? step.origin.line,
      `when: changes nothing on step ${step.number}: it is read after the step has run and guards only its "next:" or "switch:", and this step has neither (the step always runs; to skip a step, put when: with next: on the step before it)`,
    )
}

/** `$.steps.N` and `$.decisions.N` in when/switch conditions must name existing steps. */
function checkGuards(
  step: Step,
  md: string,
  exists: (n: number) => boolean,
  range: string,
  err: (f: string, l: number, m: string) => void,
): void {
  const conds: Array<[string, string, number]> = []
  if (step.when !== undefined) conds.push(['when', step.when, step.lines.when ?? step.origin.line])
  for (const p of step.switch)
    conds.push([`switch port "${p.name}"`, p.condition, step.lines.switch ?? step.origin.line])
  for (const [what, src, line] of conds) {
    const parsed = parseCondition(src)
    if (!parsed.ok || parsed.condition.kind !== 'path') continue
    const [root, n] = parsed.condition.path
    if ((root === 'steps' || root === 'decisions') && n !== undefined) {
      if (!/^\d+$/.test(n) || !exists(Number(n)))
        err(md, line, `${what}: "$.${root}.${n}" refers to step ${n}, which does not exist (${range})`)
    }
  }
}

function checkCalls(
  step: Step,
  md: string,
  sop: Sop,
  err: (f: string, l: number, m: string) => void,
  warn: (f: string, l: number, m: string) => void,
): void {
  const toolsLine = step.lines.tools ?? step.origin.line
  for (const t of step.tools)
    if (!isKnownTool(t))
      warn(md, toolsLine, `tools: unknown tool "${t}" (not built in; fine if a plugin provides it)`)
  for (const t of step.allowTools ?? [])
    if (!isKnownTool(t))
      warn(md, step.lines.allow_tools ?? step.origin.line, `allow-tools: unknown tool "${t}"`)
  for (const t of step.denyTools)
    if (!isKnownTool(t))
      warn(md, step.lines.deny_tools ?? step.origin.line, `deny-tools: unknown tool "${t}"`)
  step.calls.forEach((call, k) => {
    const line = call.origin.line
    if (!isKnownTool(call.tool) && !step.tools.includes(call.tool))
      warn(md, line, `call: unknown tool "${call.tool}" (not built in; fine if a plugin provides it)`)
    if (step.denyTools.includes(call.tool))
      err(md, line, `call: tool "${call.tool}" is in this step's deny-tools`)
    if (step.allowTools && !step.allowTools.includes(call.tool))
      err(
        md,
        line,
        `call: tool "${call.tool}" is not in this step's allow-tools (${step.allowTools.join(', ')})`,
      )
    const scan = scanTemplates(call.args)
    for (const open of scan.unclosed)
      err(
        md,
        line,
        `call: unclosed template "${open}" (a template is {{steps.N.path}}, {{calls.K.path}} or {{trigger.path}}, closed with "}}")`,
      )
    for (const bad of scan.malformed)
      err(
        md,
        line,
        `call: malformed template ${bad} (expected {{steps.N.path}}, {{calls.K.path}} or {{trigger.path}})`,
      )
    for (const r of scan.refs) {
      if (r.kind === 'trigger') continue
      if (r.kind === 'steps') {
        if (r.index < 1 || r.index > sop.steps.length)
          err(md, line, `call: ${r.raw} refers to step ${r.index}, which does not exist`)
        else if (r.index >= step.number)
          err(
            md,
            line,
            `call: ${r.raw} refers to step ${r.index}, which does not come before step ${step.number}`,
          )
      } else if (r.index >= k) {
        err(
          md,
          line,
          `call: ${r.raw} refers to call ${r.index}, but only ${k} call${k === 1 ? '' : 's'} come${k === 1 ? 's' : ''} before this one in step ${step.number} (calls count from 0)`,
        )
      }
    }
  })
  // sops/RUNTIME.md, "Deterministic runs": a deterministic run must execute every step's calls; a step without one fails.
  const mode = step.mode ?? sop.executionMode
  if (mode === 'deterministic' && step.kind === 'execute' && step.calls.length === 0) {
    err(
      md,
      step.origin.line,
      `step ${step.number} has no "call:" but runs deterministically (add a call, or make it "kind: checkpoint")`,
    )
  }
}

/** depends_on must form a DAG; each cycle is reported once, at the step where it was found. */
function checkCycles(steps: Step[], md: string, err: (f: string, l: number, m: string) => void): void {
  const deps = new Map(steps.map((s) => [s.number, s.dependsOn.filter((d) => d !== s.number)]))
  const state = new Map<number, 'visiting' | 'done'>()
  const reported = new Set<string>()
  const visit = (n: number, path: number[]): void => {
    state.set(n, 'visiting')
    for (const d of deps.get(n) ?? []) {
      if (!deps.has(d)) continue
      if (state.get(d) === 'visiting') {
        const cycle = [...path.slice(path.indexOf(d)), d]
        const key = [...new Set(cycle)].sort((a, b) => a - b).join(',')
        if (reported.has(key)) continue
        reported.add(key)
        const step = steps.find((s) => s.number === n)
        err(md, step?.lines.depends_on ?? step?.origin.line ?? 1, `depends_on: cycle ${cycle.join(' -> ')}`)
      } else if (state.get(d) !== 'done') visit(d, [...path, d])
    }
    state.set(n, 'done')
  }
  for (const s of steps) if (!state.has(s.number)) visit(s.number, [s.number])
}
