// sop_status: the agent checks runs: one run by id (state, current step, gate, error, step
// statuses), or the latest runs of a SOP, or the latest runs of all SOPs.
import type { XStatic } from 'typebox/schema'
import { fail } from '../errors/codes.ts'
import type { HubEngine } from '../sops/hub-engine.ts'
import type { Json } from '../sops/types.ts'
import type { Tool, ToolResult } from './types.ts'

export const SopStatusArgs = {
  type: 'object',
  properties: {
    run_id: { type: 'string', minLength: 1 },
    sop: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100 },
  },
  additionalProperties: false,
} as const
export type SopStatusArgs = XStatic<typeof SopStatusArgs>

export function createSopStatusTool(getEngine: () => HubEngine | undefined): Tool {
  return {
    name: 'sop_status',
    description:
      'Check SOP runs: { run_id } for one run, { sop } for its latest runs, {} for the latest of all. Output: { run } or { runs }.',
    schema: SopStatusArgs,
    async run(raw): Promise<ToolResult> {
      const args = raw as unknown as SopStatusArgs
      const engine = getEngine()
      if (!engine) return fail('UNAVAILABLE', 'sop_status: the SOP engine is not running')
      if (args.run_id !== undefined) {
        const r = await engine.getRun(args.run_id)
        if (!r) return fail('RUN_NOT_FOUND', `sop_status: no run with id "${args.run_id}"`)
        const steps = Object.values(r.steps).map((s) => ({
          step: s.number,
          status: s.status,
          ...(s.error ? { error: s.error } : {}),
          ...(s.reason ? { reason: s.reason } : {}),
        }))
        const run = {
          id: r.id,
          sop: r.sop,
          state: r.state,
          current: r.current,
          ...(r.gate ? { gate: r.gate } : {}),
          ...(r.error ? { error: r.error } : {}),
          steps,
          output: r.lastOutput,
        }
        return { ok: true, output: { run } as unknown as Json }
      }
      const runs = await engine.listRuns({
        ...(args.sop !== undefined ? { sop: args.sop } : {}),
        limit: args.limit ?? 10,
      })
      return { ok: true, output: { runs } as unknown as Json }
    },
  }
}
