// The parsed form of a SOP directory (SOP.toml + SOP.md). Pure data: the loader produces it,
// the validator checks it, the engine runs it. Every node keeps the file and line it came from
// so that errors can say `file:line: message` (hub/DESIGN.md, "Errors and bad input").

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

export const PRIORITIES = ['low', 'normal', 'high', 'critical'] as const
export type Priority = (typeof PRIORITIES)[number]

export const EXECUTION_MODES = [
  'auto',
  'supervised',
  'step_by_step',
  'priority_based',
  'deterministic',
] as const
export type ExecutionMode = (typeof EXECUTION_MODES)[number]

export const ADMISSION_POLICIES = ['parallel', 'hold', 'coalesce', 'drop'] as const
export type AdmissionPolicy = (typeof ADMISSION_POLICIES)[number]

export const STEP_KINDS = ['execute', 'checkpoint', 'capability'] as const
export type StepKind = (typeof STEP_KINDS)[number]

export const TRIGGER_TYPES = [
  'peripheral',
  'manual',
  'cron',
  'webhook',
  'mqtt',
  'filesystem',
  'channel',
  'amqp',
] as const
export type TriggerType = (typeof TRIGGER_TYPES)[number]

export const FS_EVENTS = ['created', 'modified', 'deleted', 'renamed'] as const
export type FsEvent = (typeof FS_EVENTS)[number]

/** Where a node came from: the file path and the 1-based line. */
export interface Origin {
  file: string
  line: number
}

interface TriggerBase {
  origin: Origin
}
export interface PeripheralTrigger extends TriggerBase {
  type: 'peripheral'
  board: string
  signal: string
  condition: string
}
export interface ManualTrigger extends TriggerBase {
  type: 'manual'
}
export interface CronTrigger extends TriggerBase {
  type: 'cron'
  expression: string
}
export interface WebhookTrigger extends TriggerBase {
  type: 'webhook'
  path: string
}
export interface MqttTrigger extends TriggerBase {
  type: 'mqtt'
  topic: string
  condition: string
}
/** sops/FORMAT.md, "Triggers": `path` glob, `events` (empty = all), optional `condition`. */
export interface FilesystemTrigger extends TriggerBase {
  type: 'filesystem'
  path: string
  events: FsEvent[]
  condition: string
}
export interface ChannelTrigger extends TriggerBase {
  type: 'channel'
  channel: string
  alias?: string
  condition: string
}
export interface AmqpTrigger extends TriggerBase {
  type: 'amqp'
  routing_key: string
  condition: string
}
export type Trigger =
  | PeripheralTrigger
  | ManualTrigger
  | CronTrigger
  | WebhookTrigger
  | MqttTrigger
  | FilesystemTrigger
  | ChannelTrigger
  | AmqpTrigger

/** A planned tool call (`call:` bullet). `args` may hold `{{steps.N.path}}` / `{{calls.K.path}}` templates. */
export interface PlannedCall {
  tool: string
  args: Json
  origin: Origin
}

export type OnFailure = { kind: 'fail' } | { kind: 'retry'; count: number } | { kind: 'goto'; step: number }

/** `switch:` port `name>condition>step`. An empty condition is a catch-all; `target` null = no target. */
export interface SwitchPort {
  name: string
  condition: string
  target: number | null
}

/** JSON-Schema-like contract for `input:` / `output:` (checked with typebox at the step boundary). */
export type Contract = { [key: string]: Json }

export interface Step {
  /** 1-based position in `## Steps`. */
  number: number
  title: string
  /** Body text, plus every sub-bullet that is not a known property. */
  body: string
  origin: Origin
  tools: string[]
  /** undefined = no allow list (everything not denied is allowed). */
  allowTools?: string[]
  denyTools: string[]
  requiresConfirmation: boolean
  kind: StepKind
  calls: PlannedCall[]
  input?: Contract
  output?: Contract
  /** Read after the step has run; guards its next:/switch: (sops/RUNTIME.md, "Routing"). */
  when?: string
  next?: number
  switch: SwitchPort[]
  dependsOn: number[]
  terminal: boolean
  onFailure: OnFailure
  mode?: ExecutionMode
  agent?: string
  prompt?: string
  decide?: string
  /** Skip this step when step N's `decide:` question was answered yes. */
  unlessDecided?: number
  /** Line of each property bullet, by canonical key (`on_failure`, `call`…), for error messages. */
  lines: Record<string, number>
}

export interface Sop {
  name: string
  description: string
  version?: string
  priority: Priority
  executionMode: ExecutionMode
  cooldownSecs: number
  maxConcurrent: number
  admissionPolicy: AdmissionPolicy
  agent?: string
  triggers: Trigger[]
  steps: Step[]
  /** The SOP directory, its two files, and the plugin package it came from (if under `<sops_dir>/<package>/`). */
  dir: string
  tomlPath: string
  mdPath: string
  package?: string
}

/** A problem found while loading or validating, always located. */
export interface Diagnostic {
  file: string
  line: number
  message: string
  severity: 'error' | 'warning'
}
