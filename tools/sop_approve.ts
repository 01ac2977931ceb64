// sop_approve: the agent approves a waiting run on its user's behalf (sops/README.md, "Agent tools").
// sops/RUNTIME.md, "Who may pass a gate": no tool call moves a run past a gate that needs an operator. So this tool passes
// only mode gates (supervised, step_by_step); at a requires_confirmation step, a checkpoint or
// a gate carrying operator questions it records the request on the run and fails, saying the
// operator must approve (`svc sop approve`, local API).
import type { XStatic } from 'typebox/schema'
import { fail, failAt } from '../errors/codes.ts'
import type { HubEngine } from '../sops/hub-engine.ts'
import type { Tool, ToolResult } from './types.ts'

export const SopApproveArgs = {
  type: 'object',
  required: ['run_id'],
  properties: { run_id: { type: 'string', minLength: 1 }, note: { type: 'string', maxLength: 1000 } },
  additionalProperties: false,
} as const
export type SopApproveArgs = XStatic<typeof SopApproveArgs>

export function createSopApproveTool(getEngine: () => HubEngine | undefined): Tool {
  return {
    name: 'sop_approve',
    description:
      'Approve a run waiting at a supervised or step_by_step gate: { run_id, note? }. Gates that need an operator are not passed; the request is recorded for them.',
    schema: SopApproveArgs,
    async run(raw, ctx): Promise<ToolResult> {
      const args = raw as unknown as SopApproveArgs
      const engine = getEngine()
      if (!engine) return fail('UNAVAILABLE', 'sop_approve: the SOP engine is not running')
      if (args.run_id === ctx.runId) return fail('FORBIDDEN', 'sop_approve: a run cannot approve itself')
      const r = await engine.approve(args.run_id, {
        by: `agent (run ${ctx.runId})`,
        via: 'agent',
        ...(args.note !== undefined ? { note: args.note } : {}),
      })
      if (!r.ok) return failAt('sop_approve: ', r)
      return { ok: true, output: { run_id: r.run.id, state: r.run.state } }
    },
  }
}
