// One trigger as a person reads it (`peripheral vend1/coin when $.amount >= 1`): the CLI's
// `svc sop show` and the hub console's SOPs page print the same words.
import type { Trigger } from './types.ts'

export function triggerText(t: Trigger): string {
  const when = (c: string): string => (c.trim() ? ` when ${c}` : '')
  switch (t.type) {
    case 'peripheral':
      return `peripheral ${t.board}/${t.signal}${when(t.condition)}`
    case 'manual':
      return 'manual'
    case 'cron':
      return `cron "${t.expression}"`
    case 'webhook':
      return `webhook ${t.path}`
    case 'mqtt':
      return `mqtt ${t.topic}${when(t.condition)}`
    case 'filesystem':
      return `filesystem ${t.path} [${t.events.length ? t.events.join(', ') : 'all changes'}]${when(t.condition)}`
    case 'channel':
      return `channel ${t.channel}${t.alias ? ` (alias ${t.alias})` : ''}${when(t.condition)}`
    case 'amqp':
      return `amqp ${t.routing_key}${when(t.condition)}`
  }
}
