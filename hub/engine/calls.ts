// Running a step's tool calls (sops/RUNTIME.md, "Tool calls"): allow/deny lists, template resolution,
// schema checks, then the tool. Every refusal names the step, the call and the reason; template
// text never reaches a tool (sops/RUNTIME.md, "Templates at run time").
import { ERROR_STATUS, type ErrorCode, fail, failAt } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { resolveArgs } from '../../sops/templates.ts'
import type { Json, Step } from '../../sops/types.ts'
import type { Tool, ToolRegistry, ToolResult } from '../../tools/types.ts'
import { schemaProblem } from './contracts.ts'

export interface CallScope {
  runId: string
  sop: string
  step: Step
  /** Outputs of completed steps by number. */
  steps: Record<number, Json>
  /** The trigger payload as step 1 received it, for `{{trigger.path}}`. */
  trigger: Json
  /** The step is being run again after a restart (ToolContext.repeat). */
  repeat?: boolean
  signal: AbortSignal
}

/** Null when `step` may call `tool`, else why not. */
export function toolRefusal(step: Step, tool: string): string | null {
  if (step.denyTools.includes(tool)) return `tool "${tool}" is denied by deny-tools`
  if (step.allowTools !== undefined && !step.allowTools.includes(tool)) {
    return `tool "${tool}" is not in allow-tools (${step.allowTools.join(', ') || 'empty'})`
  }
  return null
}

/** One checked call: refusal, unknown tool, schema, then run (a throwing tool is a failure, not a crash). */
export async function callTool(
  tools: ToolRegistry,
  scope: CallScope,
  index: number,
  name: string,
  args: Json,
): Promise<ToolResult> {
  const refused = toolRefusal(scope.step, name)
  if (refused) return fail('FORBIDDEN', refused)
  const tool: Tool | undefined = tools.get(name)
  if (!tool) return fail('NOT_FOUND', `no tool named "${name}"`)
  const bad = schemaProblem(tool.schema as object, args)
  if (bad) return fail('BAD_INPUT', `arguments for ${name} do not match its schema: ${bad}`)
  let r: ToolResult
  try {
    r = await tool.run(args, {
      runId: scope.runId,
      sop: scope.sop,
      step: scope.step.number,
      call: index,
      idempotencyKey: `${scope.runId}:${scope.step.number}:${index}`,
      ...(scope.repeat ? { repeat: true } : {}),
      // Read when the tool reads it: the engine makes a run's AbortController only then.
      get signal() {
        return scope.signal
      },
    })
  } catch (err) {
    return fail('INTERNAL', `${name} threw: ${errorText(err)}`)
  }
  // A plugin tool may break its contract; the run records that instead of storing garbage.
  if (typeof r !== 'object' || r === null || typeof r.ok !== 'boolean')
    return fail('INTERNAL', `${name} returned no { ok, output } result`)
  if (!r.ok)
    return fail(
      knownCode(r.code),
      typeof r.error === 'string' && r.error !== '' ? r.error : `${name} failed without saying why`,
    )
  if (r.output === undefined) return { ok: true, output: null }
  return r
}

/** A tool's failure code as it gave it; one that is not a code breaks the tool's contract. */
function knownCode(code: unknown): ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code) ? (code as ErrorCode) : 'INTERNAL'
}

/** The step's output, or why it failed: the run record keeps the message, the code stays in process. */
export type CallsOutcome =
  | { ok: true; output: Json; calls: Json[] }
  | { ok: false; code: ErrorCode; error: string; calls: Json[] }

/** Runs the planned calls in order; the step output is the last call's output. */
export async function runPlannedCalls(tools: ToolRegistry, scope: CallScope): Promise<CallsOutcome> {
  const outputs: Json[] = []
  const step = scope.step
  for (let k = 0; k < step.calls.length; k++) {
    const call = step.calls[k]!
    const where = `call ${k} (${call.tool})`
    const refused = toolRefusal(step, call.tool)
    if (refused) return { ...fail('FORBIDDEN', `${where}: ${refused}`), calls: outputs }
    const args = resolveArgs(call.args, { steps: scope.steps, calls: outputs, trigger: scope.trigger })
    if (!args.ok) return { ...failAt(`${where}: `, args), calls: outputs }
    const r = await callTool(tools, scope, k, call.tool, args.value)
    if (!r.ok) return { ...failAt(`${where}: `, r), calls: outputs }
    outputs.push(r.output)
  }
  return { ok: true, output: outputs.length > 0 ? outputs[outputs.length - 1]! : null, calls: outputs }
}
