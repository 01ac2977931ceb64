// sop_execute: the agent starts a manual run of a SOP (sops/FORMAT.md, "Triggers": manual). The answer is the
// admission decision: started (with the run id), deferred, held, coalesced, dropped, cooldown.
import type { XStatic } from 'typebox/schema'
import { fail } from '../errors/codes.ts'
import type { HubEngine } from '../sops/hub-engine.ts'
import type { Json } from '../sops/types.ts'
import type { Tool, ToolResult } from './types.ts'

export const SopExecuteArgs = {
  type: 'object',
  required: ['sop'],
  properties: { sop: { type: 'string', minLength: 1 }, payload: {} },
  additionalProperties: false,
} as const
export type SopExecuteArgs = XStatic<typeof SopExecuteArgs>

export function createSopExecuteTool(getEngine: () => HubEngine | undefined): Tool {
  return {
    name: 'sop_execute',
    description: 'Start a manual run of a SOP: { sop, payload? }. Output: { outcome, run_id?, reason }.',
    schema: SopExecuteArgs,
    async run(raw, ctx): Promise<ToolResult> {
      const args = raw as unknown as SopExecuteArgs
      const engine = getEngine()
      if (!engine) return fail('UNAVAILABLE', 'sop_execute: the SOP engine is not running')
      const d = await engine.trigger(args.sop, {
        type: 'manual',
        source: `sop_execute from run ${ctx.runId} step ${ctx.step}`,
        payload: (args.payload ?? {}) as Json,
        at: Date.now(),
      })
      if (d.code === 'SOP_NOT_LOADED') return fail(d.code, `sop_execute: ${d.reason}`)
      return {
        ok: true,
        output: {
          outcome: d.outcome,
          ...(d.runId !== undefined ? { run_id: d.runId } : {}),
          reason: d.reason,
        },
      }
    },
  }
}
