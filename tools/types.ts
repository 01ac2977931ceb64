// What every tool a SOP step may call looks like. Tools are one file each under tools/, declare
// a typebox schema for their arguments, and receive their I/O (broker, boards, stores, chain)
// as injected ports so the same tool runs against real services in tests.
// The hub's own tools write that schema as a JSON Schema literal (`as const`, typed by
// typebox/schema's XStatic) rather than with typebox's Type builders: the builders' module is
// ~300 files and ~2.4 MB of heap that `svc hub` would load at start for seven small objects
// (hub/DESIGN.md, "Keeping idle memory down"), while typebox/schema, which checks the arguments, is loaded by the engine anyway.
import type { TSchema } from 'typebox'
import type { Failure } from '../errors/codes.ts'
import type { Json } from '../sops/types.ts'

export interface ToolContext {
  runId: string
  sop: string
  step: number
  /** 0-based index of the call within the step. */
  call: number
  /**
   * Stable across retries of a run after a crash/restart: `${runId}:${step}:${call}`.
   * Tools with an effect that must happen once (chain_attest) key on it, so that re-running
   * a step whose effect was already durable returns the stored result instead of repeating it.
   */
  idempotencyKey: string
  /**
   * The hub restarted while this step was under way (or before its start was recorded): this
   * call may have been made before, and its effect may already have happened once.
   */
  repeat?: boolean
  signal: AbortSignal
}

/** A failure's code says what went wrong (errors/README.md, "Codes"); a run record keeps only its message. */
export type ToolResult = { ok: true; output: Json } | Failure

export interface Tool {
  name: string
  description: string
  /** typebox schema of `args`; the engine checks args against it before `run`. */
  schema: TSchema
  run(args: Json, ctx: ToolContext): Promise<ToolResult>
}

export type ToolRegistry = ReadonlyMap<string, Tool>
