// `GET /hub/status`: the hub's state in one answer, for `svc hub status` (cli/hub-status.ts):
// what `svc/hub/state` says (hub/mqtt-state/payloads.ts), plus the process, the broker, and the
// MQTT session's backlog with the broker limit that drops events next when the hub falls behind
// (hub/README.md, Falling behind an external broker), and how far back the run history reaches
// (hub/history/view.ts).
import type { FastifyInstance } from 'fastify'
import type { HistoryReach } from '../../sops/hub-engine.ts'
import { historyView } from '../history/view.ts'
import { BEHIND_AFTER_S, type MqttBacklog } from '../triggers/intake.ts'
import { type HubSnapshot, hubStateObject } from '../mqtt-state/payloads.ts'

/** Where events the hub has not read yet wait, and who drops them past a limit. */
export const EMBEDDED_QUEUE =
  'their publishers: the embedded broker hands events to the triggers in-process, withholds each ' +
  "PUBACK until the event is admitted, and at the hub's cap reads no more from a publisher (nothing is dropped)"
export const EXTERNAL_QUEUE =
  "the broker's queue for the hub session, up to the broker's limit, past which it drops them " +
  'without telling the hub (Mosquitto max_queued_messages, default 1000; EMQX mqtt.max_mqueue_len, default 1000)'

export interface StatusInput {
  snapshot: HubSnapshot
  pid: number
  broker: { embedded: boolean; url: string; connected: boolean }
  backlog: MqttBacklog | null
  /** HubEngine.history(); absent or null on an engine without a history log. */
  history?: HistoryReach | null
}

/** A URL as shown: no user name or password, whatever the configuration holds. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.username === '' && u.password === '') return url
    u.username = ''
    u.password = ''
    return u.toString().replace(/\/$/, '')
  } catch {
    return url
  }
}

export function hubStatus(i: StatusInput) {
  const b = i.backlog
  return {
    ...hubStateObject(i.snapshot),
    pid: i.pid,
    uptime_s: Math.floor((i.snapshot.now - i.snapshot.since) / 1000),
    broker: {
      kind: i.broker.embedded ? ('embedded' as const) : ('external' as const),
      url: shownUrl(i.broker.url),
      connected: i.broker.connected,
      queue_limit: i.broker.embedded ? EMBEDDED_QUEUE : EXTERNAL_QUEUE,
    },
    // `lagging`: in flight without a break for BEHIND_AFTER_S, or reading stopped at the cap.
    mqtt: b && { ...b, lagging: b.busySeconds >= BEHIND_AFTER_S || b.inFlight >= b.cap },
    history: i.history ? historyView(i.history) : null,
  }
}

export type HubStatus = ReturnType<typeof hubStatus>

export function registerStatusRoute(app: FastifyInstance, status: () => HubStatus): void {
  app.get('/hub/status', async () => status())
}
