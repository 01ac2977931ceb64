// Home Assistant MQTT discovery messages for what the hub knows: each board's availability and
// the signals it has sent, the hub itself, its held backlog and the approvals waiting. Pure:
// publisher.ts sends them retained and clears the ones no longer wanted.
//
// Home Assistant, MQTT discovery: a config is published retained on
// `<prefix>/<component>/<node_id>/<object_id>/config`, node_id and object_id in [a-zA-Z0-9_-];
// `unique_id` plus a `device` with `identifiers` puts the entity in HA's device registry; an
// empty retained payload removes it; HA announces `online` on `<prefix>/status` when it starts,
// and configs are published again then. Entities use the `availability` list (not
// `availability_topic`: the two must not be given together).
import { HUB_STATE_TOPIC, PENDING_TOPIC } from './payloads.ts'
import { availabilityTopic, boardTopic } from '../../mqtt/topics.ts'

export interface DiscoveryInput {
  prefix: string
  nodeId: string
  version: string
  boards: readonly { name: string; signals: readonly { name: string; sample: string }[] }[]
}

export interface DiscoveryMessage {
  topic: string
  payload: string
}

/** At most this many signals per board become entities: a board cannot flood HA with names. */
export const MAX_SIGNALS_PER_BOARD = 32

const ID_OK = /^[A-Za-z0-9_-]+$/

/** An id for HA's topic levels: the name itself when it fits, else a spelling that keeps it apart. */
export function haId(name: string): string {
  if (ID_OK.test(name)) return name
  // Board and signal names may hold `.`; two names spelled alike after replacement stay apart by hash.
  return `${name.replace(/[^A-Za-z0-9_-]/g, '_')}_${fnv1a(name)}`
}

function fnv1a(s: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, '0').slice(0, 6)
}

const HUB_AVAILABLE = {
  topic: HUB_STATE_TOPIC,
  value_template: '{{ value_json.state }}',
  payload_available: 'online',
  payload_not_available: 'offline',
}

function boardAvailable(board: string) {
  return { topic: availabilityTopic(board), payload_available: 'online', payload_not_available: 'offline' }
}

/**
 * How a signal's state is read, from one payload the board sent: a number is a measurement; a
 * JSON object with a numeric `value` or `v` is that number, its fields attributes; anything
 * else is its text (HA keeps at most 255 characters of a state).
 */
export function signalReading(sample: string): {
  value_template?: string
  state_class?: 'measurement'
  json_attributes_topic?: true
} {
  const t = sample.trim()
  if (t !== '' && Number.isFinite(Number(t))) return { state_class: 'measurement' }
  let v: unknown
  try {
    v = JSON.parse(t)
  } catch {
    return { value_template: '{{ value[:255] }}' }
  }
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const o = v as Record<string, unknown>
    for (const k of ['value', 'v'])
      if (typeof o[k] === 'number')
        return {
          value_template: `{{ value_json.${k} }}`,
          state_class: 'measurement',
          json_attributes_topic: true,
        }
    return { value_template: '{{ value[:255] }}', json_attributes_topic: true }
  }
  return { value_template: '{{ value[:255] }}' }
}

export function discoveryMessages(i: DiscoveryInput): DiscoveryMessage[] {
  const node = i.nodeId
  const hubDevice = {
    identifiers: [`svc_${node}`],
    name: `svc hub ${node}`,
    manufacturer: 'svc',
    model: 'hub',
    sw_version: i.version,
  }
  const origin = { name: 'svc', sw_version: i.version }
  const out: DiscoveryMessage[] = []
  const add = (component: string, objectId: string, config: Record<string, unknown>): void => {
    out.push({
      topic: `${i.prefix}/${component}/${node}/${objectId}/config`,
      payload: JSON.stringify({ ...config, unique_id: `svc_${node}_${objectId}`, origin }),
    })
  }

  // The hub's own state is its availability: no `availability` of its own.
  add('binary_sensor', 'hub', {
    name: 'Hub',
    device_class: 'connectivity',
    state_topic: HUB_STATE_TOPIC,
    value_template: '{{ value_json.state }}',
    payload_on: 'online',
    payload_off: 'offline',
    device: hubDevice,
  })
  add('sensor', 'approvals_pending', {
    name: 'Approvals waiting',
    icon: 'mdi:account-clock',
    state_topic: PENDING_TOPIC,
    value_template: '{{ value_json.count }}',
    json_attributes_topic: PENDING_TOPIC,
    json_attributes_template: '{{ {"runs": value_json.runs, "truncated": value_json.truncated} | tojson }}',
    state_class: 'measurement',
    availability: [HUB_AVAILABLE],
    device: hubDevice,
  })
  add('sensor', 'held_triggers', {
    name: 'Held triggers',
    icon: 'mdi:tray-full',
    state_topic: HUB_STATE_TOPIC,
    value_template: '{{ value_json.held.count }}',
    state_class: 'measurement',
    availability: [HUB_AVAILABLE],
    device: hubDevice,
  })

  for (const b of i.boards) {
    const bid = haId(b.name)
    const device = {
      identifiers: [`svc_${node}_${bid}`],
      name: b.name,
      manufacturer: 'svc',
      model: 'board',
      via_device: `svc_${node}`,
    }
    add('binary_sensor', `${bid}_availability`, {
      name: 'Connected',
      device_class: 'connectivity',
      entity_category: 'diagnostic',
      state_topic: availabilityTopic(b.name),
      payload_on: 'online',
      payload_off: 'offline',
      availability: [HUB_AVAILABLE],
      device,
    })
    for (const s of b.signals.slice(0, MAX_SIGNALS_PER_BOARD)) {
      const topic = boardTopic(b.name, s.name)
      const reading = signalReading(s.sample)
      add('sensor', `${bid}_${haId(s.name)}`, {
        name: s.name,
        state_topic: topic,
        ...(reading.value_template !== undefined ? { value_template: reading.value_template } : {}),
        ...(reading.state_class !== undefined ? { state_class: reading.state_class } : {}),
        ...(reading.json_attributes_topic ? { json_attributes_topic: topic } : {}),
        availability: [HUB_AVAILABLE, boardAvailable(b.name)],
        availability_mode: 'all',
        device,
      })
    }
  }
  return out
}

/** HA's birth topic: `online` there means HA (re)started and wants the configs again. */
export function birthTopic(prefix: string): string {
  return `${prefix}/status`
}
