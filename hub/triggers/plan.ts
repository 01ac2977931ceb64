// The trigger plan: which SOP listens on what, built from the loaded SOPs. Pure: it checks
// each trigger's fields once (a bad trigger is reported with its file and line and skipped;
// the SOP's other triggers still run), and the sources (MQTT, cron, webhook, filesystem,
// channel) only ever read the plan.
import { isAbsolute, join } from 'node:path'
import picomatch from 'picomatch'
import { CronExpressionParser } from 'cron-parser'
import { errorText } from '../../errors/text.ts'
import type {
  AmqpTrigger,
  ChannelTrigger,
  CronTrigger,
  Diagnostic,
  FilesystemTrigger,
  MqttTrigger,
  PeripheralTrigger,
  Sop,
  Trigger,
  WebhookTrigger,
} from '../../sops/types.ts'
import { filterError, isTopicLevel } from '../../mqtt/topics.ts'
import { peripheralFilter } from './peripheral.ts'

export interface Planned<T extends Trigger> {
  sop: string
  trigger: T
}

export interface TriggerPlan {
  /** Peripheral triggers, as the MQTT filter `boards/<board>/<signal>` they listen on. */
  peripheral: (Planned<PeripheralTrigger> & { filter: string })[]
  mqtt: (Planned<MqttTrigger> & { filter: string })[]
  cron: Planned<CronTrigger>[]
  /** Exact path → the SOP that answers it (one SOP per path). */
  webhook: Map<string, Planned<WebhookTrigger>>
  /** `base`: the absolute folder watched; `isMatch` takes an absolute path. */
  filesystem: (Planned<FilesystemTrigger> & { base: string; isMatch: (path: string) => boolean })[]
  /** Channel name (and alias) → the SOPs listening on it. */
  channel: Map<string, Planned<ChannelTrigger>[]>
  amqp: Planned<AmqpTrigger>[]
  /** Every loaded SOP can be started by hand (`sop_execute`, `svc sop run`). */
  sops: Set<string>
  problems: Diagnostic[]
}

export function cronError(expression: string): string | null {
  const fields = expression.trim().split(/\s+/)
  if (fields.length !== 5 || fields[0] === '') {
    return `cron expression "${expression}" must have exactly five fields (minute hour day-of-month month day-of-week), found ${fields[0] === '' ? 0 : fields.length}`
  }
  try {
    CronExpressionParser.parse(expression)
    return null
  } catch (err) {
    return `cron expression "${expression}" is invalid: ${errorText(err)}`
  }
}

export function webhookPathError(path: string): string | null {
  if (!path.startsWith('/')) return `webhook path "${path}" must start with "/"`
  if (path.length > 512) return 'webhook path is longer than 512 characters'
  if (/[?#\s]/.test(path)) return `webhook path "${path}" must not contain "?", "#" or whitespace`
  return null
}

export function buildPlan(sops: readonly Sop[]): TriggerPlan {
  const plan: TriggerPlan = {
    peripheral: [],
    mqtt: [],
    cron: [],
    webhook: new Map(),
    filesystem: [],
    channel: new Map(),
    amqp: [],
    sops: new Set(),
    problems: [],
  }
  const problem = (t: Trigger, message: string, severity: Diagnostic['severity'] = 'error'): void => {
    plan.problems.push({ file: t.origin.file, line: t.origin.line, message, severity })
  }
  for (const sop of [...sops].sort((a, b) => a.name.localeCompare(b.name))) {
    plan.sops.add(sop.name)
    for (const t of sop.triggers) {
      switch (t.type) {
        case 'peripheral': {
          if (!isTopicLevel(t.board))
            problem(t, `peripheral trigger: board "${t.board}" must be one topic level (no "/", "+" or "#")`)
          else if (!isTopicLevel(t.signal))
            problem(
              t,
              `peripheral trigger: signal "${t.signal}" must be one topic level (no "/", "+" or "#")`,
            )
          else plan.peripheral.push({ sop: sop.name, trigger: t, filter: peripheralFilter(t) })
          break
        }
        case 'mqtt': {
          const err = filterError(t.topic)
          if (err) problem(t, `mqtt trigger: topic "${t.topic}" ${err}`)
          else plan.mqtt.push({ sop: sop.name, trigger: t, filter: t.topic })
          break
        }
        case 'cron': {
          const err = cronError(t.expression)
          if (err) problem(t, `cron trigger: ${err}`)
          else plan.cron.push({ sop: sop.name, trigger: t })
          break
        }
        case 'webhook': {
          const err = webhookPathError(t.path)
          const taken = plan.webhook.get(t.path)
          if (err) problem(t, `webhook trigger: ${err}`)
          else if (taken)
            problem(
              t,
              `webhook trigger: path "${t.path}" is already answered by SOP "${taken.sop}"; this trigger is skipped`,
            )
          else plan.webhook.set(t.path, { sop: sop.name, trigger: t })
          break
        }
        case 'filesystem': {
          if (t.path.trim() === '') {
            problem(t, 'filesystem trigger: path is empty')
            break
          }
          // A relative glob is relative to the SOP's own folder: where its author wrote it.
          const glob = isAbsolute(t.path) ? t.path : join(sop.dir, t.path)
          const scan = picomatch.scan(glob)
          const base = scan.base === '' ? sop.dir : scan.base
          plan.filesystem.push({ sop: sop.name, trigger: t, base, isMatch: picomatch(glob, { dot: true }) })
          break
        }
        case 'channel': {
          for (const name of new Set([t.channel, ...(t.alias ? [t.alias] : [])])) {
            if (name.trim() === '') continue
            const list = plan.channel.get(name) ?? []
            list.push({ sop: sop.name, trigger: t })
            plan.channel.set(name, list)
          }
          break
        }
        case 'amqp':
          plan.amqp.push({ sop: sop.name, trigger: t })
          break
        case 'manual':
          break
      }
    }
  }
  return plan
}
