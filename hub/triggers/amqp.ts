// AMQP triggers are validated but inert on this hub: consuming from an AMQP 0-9-1 broker needs
// a client library (amqplib) that the hub does not ship. Each SOP with an amqp trigger gets a
// startup warning naming its file and line, so the gap is never silent.
import type { Diagnostic } from '../../sops/types.ts'
import type { TriggerPlan } from './plan.ts'

export function amqpWarnings(plan: TriggerPlan): Diagnostic[] {
  return plan.amqp.map((a) => ({
    file: a.trigger.origin.file,
    line: a.trigger.origin.line,
    severity: 'warning' as const,
    message: `amqp trigger (routing_key "${a.trigger.routing_key}") of SOP "${a.sop}" is inert: this hub has no AMQP client; the SOP's other triggers still work`,
  }))
}
