// Running a step's tool calls (sops/RUNTIME.md, "Tool calls"): allow/deny lists, template resolution,
// schema checks, then the tool. Every refusal names the step, the call and the reason; template
// text never reaches a tool (sops/RUNTIME.md, "Templates at run time").
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
  if (refused) return { ok: false, error: refused }
  const tool: Tool | undefined = tools.get(name)
  if (!tool) return { ok: false, error: `no tool named "${name}"` }
  const bad = schemaProblem(tool.schema as object, args)
  if (bad) return { ok: false, error: `arguments for ${name} do not match its schema: ${bad}` }
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
    return { ok: false, error: `${name} threw: ${err instanceof Error ? err.message : String(err)}` }
  }
  // A plugin tool may break its contract; the run records that instead of storing garbage.
  if (typeof r !== 'object' || r === null || typeof r.ok !== 'boolean')
    return { ok: false, error: `${name} returned no { ok, output } result` }
  if (!r.ok)
    return {
      ok: false,
      error: typeof r.error === 'string' && r.error !== '' ? r.error : `${name} failed without saying why`,
    }
  if (r.output === undefined) return { ok: true, output: null }
  return r
}

export type CallsOutcome =
  | { ok: true; output: Json; calls: Json[] }
  | { ok: false; error: string; calls: Json[] }

/** Runs the planned calls in order; the step output is the last call's output. */
export async function runPlannedCalls(tools: ToolRegistry, scope: CallScope): Promise<CallsOutcome> {
  const outputs: Json[] = []
  const step = scope.step
  for (let k = 0; k < step.calls.length; k++) {
    const call = step.calls[k]!
    const where = `call ${k} (${call.tool})`
    const refused = toolRefusal(step, call.tool)
    if (refused) return { ok: false, error: `${where}: ${refused}`, calls: outputs }
    const args = resolveArgs(call.args, { steps: scope.steps, calls: outputs, trigger: scope.trigger })
    if (!args.ok) return { ok: false, error: `${where}: ${args.error}`, calls: outputs }
    const r = await callTool(tools, scope, k, call.tool, args.value)
    if (!r.ok) return { ok: false, error: `${where}: ${r.error}`, calls: outputs }
    outputs.push(r.output)
  }
  return { ok: true, output: outputs.length > 0 ? outputs[outputs.length - 1]! : null, calls: outputs }
}
