// What one step does once the driver has let it run (run-driver.ts): its planned calls, or, in a
// step that has none, the agent with the tools the step offers. The result is the step's output
// or why it failed; routing on it is the driver's.
import { fail, failAt } from '../../errors/codes.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { effectiveMode } from '../../sops/run/gates.ts'
import type { Json, Sop, Step } from '../../sops/types.ts'
import { type CallScope, type CallsOutcome, callTool, runPlannedCalls, toolRefusal } from './calls.ts'
import type { EngineContext } from './context.ts'

export async function executeStep(
  ctx: EngineContext,
  run: RunRecord,
  sop: Sop,
  step: Step,
  input: Json,
  scope: CallScope,
): Promise<CallsOutcome> {
  if (step.calls.length > 0) return runPlannedCalls(ctx.tools, scope)
  const mode = effectiveMode(sop, step)
  if (mode === 'deterministic') {
    // A checkpoint with no call passes its input through; any other step needs a call
    // (sops/RUNTIME.md, "Deterministic runs").
    if (step.kind === 'checkpoint') return { ok: true, output: input, calls: [] }
    return {
      ...fail(
        'BAD_INPUT',
        `step ${step.number} has no call: and a deterministic run makes no model round-trips`,
      ),
      calls: [],
    }
  }
  const agent = ctx.agent
  if (!agent) return { ...fail('UNAVAILABLE', 'no agent configured'), calls: [] }
  const offered = [...ctx.tools.values()].filter(
    (t) => toolRefusal(step, t.name) === null && (step.tools.length === 0 || step.tools.includes(t.name)),
  )
  let k = 0
  const calls: Json[] = []
  const r = await agent.runStep({
    sop: { name: sop.name, description: sop.description },
    step: {
      number: step.number,
      title: step.title,
      body: step.body,
      ...(step.prompt !== undefined ? { prompt: step.prompt } : {}),
    },
    ...agentAlias(sop, step),
    input,
    tools: offered.map((t) => ({ name: t.name, description: t.description, parameters: t.schema })),
    callTool: async (name, args) => {
      const res = await callTool(ctx.tools, scope, k++, name, args)
      if (res.ok) calls.push(res.output)
      ctx.note(
        run,
        step.number,
        res.ok ? 'info' : 'warn',
        `agent called ${name}: ${res.ok ? 'ok' : res.error}`,
      )
      return res
    },
    signal: scope.signal,
  })
  return r.ok ? { ok: true, output: r.value, calls } : { ...failAt('agent: ', r), calls }
}

/** The agent alias a step asks for (its own, else its SOP's), when any. */
export function agentAlias(sop: Sop, step: Step | undefined): { agent?: string } {
  const a = step?.agent ?? sop.agent
  return a !== undefined ? { agent: a } : {}
}
