// decide:/unless_decided: questions, answered when the run starts (sops/RUNTIME.md, "Decide questions").
// Pure planning: which questions go to the agent, which are conditions over the trigger, and
// which need the operator with the run's first approval.
import type { Json, Sop } from '../types.ts'
import type { EvalCondition } from './routing.ts'

export interface Question {
  step: number
  question: string
}

export interface DecisionPlan {
  /** Answered now from the trigger (question written as a condition). */
  decided: { step: number; value: boolean; by: string }[]
  /** To ask the agent. */
  agent: Question[]
  /** To ask the operator with the run's first approval. */
  operator: Question[]
}

/**
 * Deterministic runs never ask a model ("no model round-trips"); the others ask the agent when
 * one is configured. Without an agent, a question that parses as a condition is evaluated over
 * the trigger payload; anything else goes to the operator.
 */
export function planDecisions(
  sop: Sop,
  opts: {
    deterministic: boolean
    hasAgent: boolean
    trigger: Json
    isCondition: (q: string) => boolean
    evalCond: EvalCondition
  },
): DecisionPlan {
  const plan: DecisionPlan = { decided: [], agent: [], operator: [] }
  for (const step of sop.steps) {
    if (step.decide === undefined) continue
    const q = { step: step.number, question: step.decide }
    if (!opts.deterministic && opts.hasAgent) plan.agent.push(q)
    else if (opts.isCondition(step.decide))
      plan.decided.push({
        step: step.number,
        value: opts.evalCond(step.decide, opts.trigger),
        by: 'condition over the trigger',
      })
    else plan.operator.push(q)
  }
  return plan
}
