// The hub's own families: what it runs (SOPs), what reached admission (events by trigger kind
// and outcome), runs started, finished and not finished, approvals, kept triggers, how far the
// run history goes, its MQTT session and intake, and the embedded broker (Aedes' figures).
import { RUN_STATES, isFinished, isParked } from '../../sops/run/states.ts'
import { KEY_SEP } from './counts.ts'
import { ageSeconds, type Family, type MetricParts, single } from './family.ts'
import type { Snapshot } from './snapshot.ts'

const UNFINISHED = RUN_STATES.filter((s) => !isFinished(s))
const FINAL = RUN_STATES.filter(isFinished)

export function hubFamilies(parts: MetricParts): Family[] {
  const out: Family[] = [
    {
      type: 'gauge',
      name: 'svc_hub_info',
      help: 'The hub: its version and whether its broker is embedded or external (always 1)',
      labels: ['version', 'broker'],
      fill: (s, put) => put({ version: s.version, broker: s.brokerKind }, 1),
    },
    single('gauge', 'svc_sops_loaded', 'SOPs loaded and running', (s) => s.sops.loaded),
    single(
      'gauge',
      'svc_sops_invalid',
      'SOP folders that failed to load (svc sop validate says why)',
      (s) => s.sops.invalid,
    ),
    {
      type: 'counter',
      name: 'svc_trigger_events_total',
      help: 'Events handed to admission since the hub started, by trigger kind and admission outcome (one per SOP an event is offered to)',
      labels: ['kind', 'outcome'],
      fill: (s, put) => {
        for (const [key, n] of s.counts.events) {
          const [kind, outcome] = key.split(KEY_SEP) as [string, string]
          put({ kind, outcome }, n)
        }
      },
    },
    {
      type: 'counter',
      name: 'svc_runs_started_total',
      help: 'Runs started since the hub started, by SOP',
      labels: ['sop'],
      fill: (s, put) => {
        for (const sop of s.sopNames) put({ sop }, s.counts.runsStarted.get(sop) ?? 0)
      },
    },
    {
      type: 'counter',
      name: 'svc_runs_finished_total',
      help: 'Runs finished since the hub started, by SOP and final state (completed, failed, cancelled)',
      labels: ['sop', 'state'],
      fill: (s, put) => {
        for (const sop of s.sopNames)
          for (const state of FINAL)
            put({ sop, state }, s.counts.runsFinished.get(sop + KEY_SEP + state) ?? 0)
      },
    },
    {
      type: 'gauge',
      name: 'svc_runs_unfinished',
      help: 'Runs not finished, by SOP and current state (pending, running, waiting_approval, paused_checkpoint)',
      labels: ['sop', 'state'],
      fill: (s, put) => {
        const by = new Map<string, number>()
        for (const r of s.live)
          by.set(r.sop + KEY_SEP + r.state, (by.get(r.sop + KEY_SEP + r.state) ?? 0) + 1)
        for (const sop of s.sopNames)
          for (const state of UNFINISHED) put({ sop, state }, by.get(sop + KEY_SEP + state) ?? 0)
      },
    },
    {
      type: 'gauge',
      name: 'svc_approvals_pending',
      help: 'Runs parked at a gate waiting for a person, by SOP',
      labels: ['sop'],
      fill: (s, put) => {
        const by = new Map<string, number>()
        for (const r of s.live) if (isParked(r.state)) by.set(r.sop, (by.get(r.sop) ?? 0) + 1)
        for (const sop of s.sopNames) put({ sop }, by.get(sop) ?? 0)
      },
    },
    {
      type: 'gauge',
      name: 'svc_approvals_oldest_age_seconds',
      help: 'How long the oldest run parked at a gate has waited, by SOP (no series when none waits)',
      labels: ['sop'],
      fill: (s, put) => {
        const oldest = new Map<string, number>()
        for (const r of s.live) {
          if (!isParked(r.state)) continue
          const since = r.gate?.since ?? r.updatedAt
          if (since < (oldest.get(r.sop) ?? Number.POSITIVE_INFINITY)) oldest.set(r.sop, since)
        }
        for (const [sop, at] of oldest) put({ sop }, ageSeconds(s, at))
      },
    },
    {
      type: 'gauge',
      name: 'svc_triggers_kept',
      help: 'Triggers kept for later by admission, by SOP and kind (held: the hold policy; deferred: parallel past max_concurrent)',
      labels: ['sop', 'kind'],
      fill: (s, put) => {
        const by = new Map(s.kept.map((b) => [b.sop, b]))
        for (const sop of s.sopNames) {
          put({ sop, kind: 'held' }, by.get(sop)?.held ?? 0)
          put({ sop, kind: 'deferred' }, by.get(sop)?.deferred ?? 0)
        }
      },
    },
    {
      type: 'gauge',
      name: 'svc_triggers_kept_oldest_age_seconds',
      help: 'How long the oldest kept trigger has waited, by SOP (no series when none is kept)',
      labels: ['sop'],
      fill: (s, put) => {
        for (const b of s.kept) put({ sop: b.sop }, b.oldestAgeMs / 1000)
      },
    },
    single(
      'gauge',
      'svc_run_history_span_seconds',
      'Age of the oldest run in the engine store: how far back the run history goes (0 with no runs)',
      (s) => (s.oldestRunAt === null ? 0 : ageSeconds(s, s.oldestRunAt)),
    ),
    single('gauge', 'svc_mqtt_session_connected', "1 while the hub's own MQTT session is connected", (s) =>
      s.sessionConnected ? 1 : 0,
    ),
  ]
  if (parts.mqtt) {
    const m = (f: (b: NonNullable<Snapshot['mqtt']>) => number) => (s: Snapshot) => (s.mqtt ? f(s.mqtt) : 0)
    out.push(
      single(
        'gauge',
        'svc_mqtt_trigger_in_flight',
        'MQTT trigger messages received and not yet admitted (their PUBACK waits)',
        m((b) => b.inFlight),
      ),
      single(
        'gauge',
        'svc_mqtt_trigger_in_flight_peak',
        'The most MQTT trigger messages in flight at once since the hub started',
        m((b) => b.peak),
      ),
      single(
        'gauge',
        'svc_mqtt_trigger_in_flight_cap',
        'In-flight MQTT trigger messages at which the hub stops reading more',
        m((b) => b.cap),
      ),
      single(
        'gauge',
        'svc_mqtt_trigger_busy_seconds',
        'Seconds MQTT trigger messages have been in flight without a break (0: keeping up)',
        m((b) => b.busySeconds),
      ),
      single(
        'counter',
        'svc_mqtt_trigger_paused_total',
        'Times the hub stopped reading MQTT trigger messages at the cap',
        m((b) => b.paused),
      ),
      single(
        'counter',
        'svc_mqtt_trigger_behind_total',
        'Busy stretches of 5 s or more (each one logged as the hub being behind)',
        m((b) => b.behind),
      ),
      single(
        'counter',
        'svc_mqtt_trigger_repeats_total',
        'Redelivered MQTT messages recognised as already admitted',
        m((b) => b.repeats),
      ),
    )
  }
  if (parts.broker) {
    const b = (f: (x: NonNullable<Snapshot['broker']>) => number) => (s: Snapshot) =>
      s.broker ? f(s.broker) : 0
    out.push(
      single(
        'gauge',
        'svc_broker_clients_connected',
        'MQTT clients connected to the embedded broker',
        b((x) => x.clients),
      ),
      single(
        'gauge',
        'svc_broker_messages_in_flight',
        "Messages the embedded broker's emitter is delivering now",
        b((x) => x.inFlight),
      ),
      single(
        'gauge',
        'svc_broker_messages_queued',
        "Messages waiting for a free slot of the embedded broker's emitter",
        b((x) => x.queued),
      ),
      single(
        'counter',
        'svc_broker_messages_total',
        'Messages the embedded broker has routed since the hub started (its own included)',
        b((x) => x.messages),
      ),
    )
  }
  return out
}
