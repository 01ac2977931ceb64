// SOPs for the console pages' tests (server and Chromium): name → [SOP.toml, SOP.md], as
// startConsoleHub (console-helpers.ts) takes them.

/** hold: while one run waits at the checkpoint, later triggers are held (sops/RUNTIME.md, "Admission policies"). */
export const HOLD_SOP: [string, string] = [
  '[sop]\nname = "vend"\ndescription = "Dispense <b>after</b> a check & a yes"\nexecution_mode = "deterministic"\nadmission_policy = "hold"\nagent = "a"\n\n[[triggers]]\ntype = "manual"\n\n[[triggers]]\ntype = "mqtt"\ntopic = "shop/coin"\ncondition = "$.amount >= 1"\n',
  '# vend\n\n## Steps\n\n1. **Check the <slot>**\n   - call: {"tool":"wait","args":{"ms":1}}\n2. **Confirm with the operator**\n   - kind: checkpoint\n   - prompt: Dispense?\n3. **Dispense**\n   - call: {"tool":"wait","args":{"ms":1}}\n   - on_failure: retry:2\n   - terminal: true\n',
]

/** A SOP that does not load: an execution mode outside the enum. */
export const BROKEN_SOP: [string, string] = [
  '[sop]\nname = "broken"\ndescription = "d"\nexecution_mode = "sometimes"\n\n[[triggers]]\ntype = "manual"\n',
  '# broken\n\n## Steps\n\n1. **Only**\n',
]

/** Each run stores one attested line, its params from the trigger. */
export const SALE_SOP: [string, string] = [
  '[sop]\nname = "sale"\ndescription = "Attest a sale"\nexecution_mode = "deterministic"\nmax_concurrent = 8\n\n[[triggers]]\ntype = "manual"\n',
  '# sale\n\n## Steps\n\n1. **Attest**\n   - call: {"tool":"chain_attest","args":{"action":"vend","request_uri":"svc://shop/sale","params":{"n":"{{trigger.n}}"}}}\n',
]

/** Every kind of route, so the diagram is seen with lanes on both sides. */
export const ROUTES_SOP: [string, string] = [
  '[sop]\nname = "temperature-check"\ndescription = "Read, decide, cool or warm, report"\nexecution_mode = "auto"\n\n[[triggers]]\ntype = "manual"\n',
  '# temperature-check\n\n## Steps\n\n1. **Read the room temperature sensor**\n   - tools: wait\n2. **Decide**\n   - switch: hot>$.steps.1.t > 30>4; cold>$.steps.1.t < 5>5; broken>$.steps.1.err == 1>\n   - on_failure: goto:6\n3. **Log a normal reading**\n   - next: 7\n4. **Switch on cooling**\n   - on_failure: retry:3\n   - next: 7\n5. **Switch on heating**\n   - on_failure: goto:6\n   - next: 7\n6. **Alert the operator**\n   - terminal: true\n7. **Report**\n   - when: $.steps.1.t > 50\n   - next: 1\n',
]
