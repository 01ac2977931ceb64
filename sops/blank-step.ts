// A step with every field at its SOP-format default: what the parser fills in before applying
// a step's bullets, and what tests and benches start from.
import type { Origin, Step } from './types.ts'

export function blankStep(number: number, title: string, origin: Origin, over: Partial<Step> = {}): Step {
  return {
    number,
    title,
    body: '',
    origin,
    tools: [],
    denyTools: [],
    requiresConfirmation: false,
    kind: 'execute',
    calls: [],
    switch: [],
    dependsOn: [],
    terminal: false,
    onFailure: { kind: 'fail' },
    lines: {},
    ...over,
  }
}
