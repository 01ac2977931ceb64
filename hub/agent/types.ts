// The boundary between the engine and a model (sops/RUNTIME.md, "Steps that need a model"). The engine
// never lets an agent's reply move a run past a gate: the adapter only produces a step output or
// a yes/no answer, and every tool it calls goes through the engine's allow/deny and schema checks.
import type { Result } from '../../errors/codes.ts'
import type { TriggerEvent } from '../../sops/engine-api.ts'
import type { Json } from '../../sops/types.ts'
import type { ToolResult } from '../../tools/types.ts'

/** The model's answer, or why there is none (an endpoint down, a reply that is not one). */
export type AgentResult<T> = Result<{ value: T }>

export interface AgentToolSpec {
  name: string
  description: string
  /** JSON Schema of the arguments (the tool's typebox schema). */
  parameters: unknown
}

export interface AgentStepRequest {
  sop: { name: string; description: string }
  step: { number: number; title: string; body: string; prompt?: string }
  /** The step's or the SOP's `agent:` alias. */
  agent?: string
  /** The step input (sops/RUNTIME.md, "Step input and output"). */
  input: Json
  /** Tools the step may call; calls go through `callTool`, which enforces allow/deny and schemas. */
  tools: AgentToolSpec[]
  callTool(name: string, args: Json): Promise<ToolResult>
  signal: AbortSignal
}

export interface AgentDecideRequest {
  sop: { name: string; description: string }
  question: string
  trigger: TriggerEvent
  agent?: string
  signal: AbortSignal
}

export interface AgentAdapter {
  /** Do one step; the value is the step output (JSON when the reply parses as JSON, else text). */
  runStep(req: AgentStepRequest): Promise<AgentResult<Json>>
  /** Answer a `decide:` question yes (true) or no (false). */
  decide(req: AgentDecideRequest): Promise<AgentResult<boolean>>
}
