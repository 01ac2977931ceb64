// The tool names svc ships. A name outside this list is only a warning when validating a SOP:
// tools may come from plugins (sops/FORMAT.md, "What the validator checks").
export const KNOWN_TOOLS: readonly string[] = [
  'board_send',
  'mqtt_publish',
  'http_request',
  'wait',
  'chain_attest',
  'sop_execute',
  'sop_status',
  'sop_approve',
]

export function isKnownTool(name: string): boolean {
  return KNOWN_TOOLS.includes(name)
}
