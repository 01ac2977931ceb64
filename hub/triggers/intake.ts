// What every MQTT trigger source does with a message once it has it, whichever way it came (the
// hub's mqtt.js session on an external broker, or the embedded broker's in-process feed): offer
// it to the triggers, count what is being admitted, let once-only marks go after FORGET_AFTER_MS,
// and say out loud when the hub has been busy for too long.
import { createHash } from 'node:crypto'
import type { Engine, TriggerEvent } from '../../sops/engine-api.ts'
import type { Log } from '../log.ts'
import type { Firer, FireResult } from './fire.ts'
import { dispatchMessage } from './dispatch.ts'
import type { TriggerPlan } from './plan.ts'
import { errorText } from '../../errors/text.ts'
import { flat } from '../memory/flat.ts'

/** Messages bigger than this are not offered to triggers (logged and ignored). */
export const MAX_TRIGGER_PAYLOAD = 256 * 1024

/** Messages being admitted at once; at the cap the source stops taking more (backpressure). */
export const DEFAULT_MAX_IN_FLIGHT = 10_000

/**
 * How long after its PUBACK was sent a message's once-only mark is kept. A PUBACK written to
 * the socket can still be lost if the hub dies at once (the kernel resets a socket closed with
 * unread data), and a broker records it when it gets to it: the embedded broker, sharing the
 * hub's process and LevelDB thread pool, was seen taking over 2 s under a burst on two busy
 * cores. Until it has, a broker that dies (or a hub killed with it) sends the message again.
 */
export const FORGET_AFTER_MS = 30_000

/** Seconds of no moment with nothing in flight after which the hub says it is behind. */
export const BEHIND_AFTER_S = 5

export interface MqttBacklog {
  /** Messages received and not yet admitted (their PUBACK waits for the admission). */
  inFlight: number
  /** The most there have been at once since the start. */
  peak: number
  /** Times the source stopped taking messages because `inFlight` reached the cap. */
  paused: number
  /** Seconds the hub has had messages in flight without a break (0: it is keeping up). */
  busySeconds: number
  /** Times a busy stretch reached BEHIND_AFTER_S (each one warned). */
  behind: number
  /** Redelivered messages recognised as already admitted (acknowledged, not started again). */
  repeats: number
  /** The `inFlight` at which the source stops taking messages. */
  cap: number
}

/** One way MQTT messages reach the triggers (mqtt.ts, feed.ts). */
export interface MessageSource {
  /** Offer one message to the triggers (also used directly by tests and the bench). */
  handle(topic: string, payload: Buffer | string, now: number): Promise<FireResult[]>
  backlog(): MqttBacklog
  setPlan(plan: TriggerPlan): Promise<void>
  stop(): Promise<void>
}

export type OnceMark = { sop: string; key: string; fingerprint: string }

/** The fingerprint of a message's content: a redelivery has the same one. */
export function messageFingerprint(topic: string, payload: Buffer): string {
  return createHash('sha1').update(topic).update('\u0000').update(payload).digest('base64url')
}

/**
 * The once-only keys of a QoS 1 message that may come again under `key` (its sender and packet
 * id): the admission and a mark of the message go in one write, and a copy sent again (its
 * PUBACK never arrived) finds the mark and is acknowledged without a second run. The fingerprint
 * is taken only for a message that starts something (half of a busy topic may not); each mark
 * made is pushed onto `marks`, to be forgotten once the PUBACK is out. The key is kept flat
 * (hub/memory/flat.ts): the marks and the forget queue hold it for FORGET_AFTER_MS.
 */
export function onceKeys(
  sent: string,
  topic: string,
  payload: Buffer,
  marks: OnceMark[],
): (sop: string) => TriggerEvent['once'] {
  let fingerprint: string | undefined
  let key: string | undefined
  return (sop) => {
    fingerprint ??= messageFingerprint(topic, payload)
    key ??= flat(sent)
    marks.push({ sop, key, fingerprint })
    return { key, check: true, fingerprint }
  }
}

export interface Intake {
  /**
   * Offer one message to the triggers; `once` gives each SOP it starts its once-only key. `keep`:
   * an admission not recorded for want of disk is tried again once there is room (SourceOptions
   * `disk`), and the promise waits for it.
   */
  handle(
    topic: string,
    payload: Buffer | string,
    now: number,
    once?: (sop: string) => TriggerEvent['once'],
    keep?: boolean,
  ): Promise<FireResult[]>
  /**
   * `handle`, counted in flight; `after` runs once its admissions are stored (or failed, logged).
   * `keep`: the message was promised to be recorded (QoS 1 or 2: its PUBACK waits for `after`), so
   * an admission refused for want of disk waits for room and is tried again.
   */
  take(
    topic: string,
    payload: Buffer,
    once: ((sop: string) => TriggerEvent['once']) | undefined,
    after: () => void,
    keep?: boolean,
  ): void
  inFlight(): number
  /** The `inFlight` at which the source stops taking messages. */
  cap: number
  /** The source stopped taking messages at the cap. */
  paused(): void
  /** Marks of a message just acknowledged, forgotten FORGET_AFTER_MS from now. */
  forgetLater(marks: readonly OnceMark[]): void
  setPlan(plan: TriggerPlan): void
  backlog(): MqttBacklog
  stop(): void
}

/** The disk guard as a source sees it (hub/disk/guard.ts). */
export interface DiskGate {
  refusing(): boolean
  /** Resolves once new work is taken again. */
  room(): Promise<void>
}

/** What the router gives each MQTT source. */
export interface SourceOptions {
  /** Default DEFAULT_MAX_IN_FLIGHT. */
  maxInFlight?: number
  engine?: Pick<Engine, 'forgetOnce'>
  /** While it refuses, the source reads no more, and what it took waits for room (no PUBACK). */
  disk?: DiskGate
}

export interface IntakeOptions extends SourceOptions {
  /** What stops at the cap: `the hub stopped reading` (its session), … */
  atCap: string
  /** What being behind costs with this source, and where the fix is; ends the warning. */
  behindAdvice: string
}

export function createIntake(firer: Firer, log: Log, initial: TriggerPlan, opts: IntakeOptions): Intake {
  const cap = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
  let plan = initial
  let inFlight = 0
  const stats = { peak: 0, paused: 0, behind: 0, repeats: 0 }
  let busySince = -1
  let lastBehindWarn = -Infinity
  const forgetting = new ForgetQueue()

  // An admission the disk could not take is tried again once there is room; its message's PUBACK
  // waits meanwhile. The pause after room comes back keeps a failure the guard does not hear of
  // (a read error) from spinning.
  const fireKept = async (sop: string, event: TriggerEvent): Promise<FireResult> => {
    for (;;) {
      const r = await firer.fire(sop, event)
      if (r.ok || r.code !== 'DISK_FULL' || !opts.disk) return r
      await opts.disk.room()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  const handle: Intake['handle'] = async (topic, payload, now, once, keep = false) => {
    if (payload.length > MAX_TRIGGER_PAYLOAD) {
      log.warn(
        { topic, bytes: payload.length },
        `message larger than ${MAX_TRIGGER_PAYLOAD} bytes ignored by triggers`,
      )
      return []
    }
    const text = typeof payload === 'string' ? payload : payload.toString('utf8')
    const matched = dispatchMessage(plan, firer, topic, text)
    if (matched.length === 0) return []
    return Promise.all(
      matched.map((m) => {
        const o = once?.(m.sop)
        const event: TriggerEvent = {
          type: m.type,
          source: topic,
          payload: text,
          at: now,
          ...(o ? { once: o } : {}),
        }
        return keep ? fireKept(m.sop, event) : firer.fire(m.sop, event)
      }),
    )
  }

  const busySeconds = (): number => (busySince < 0 ? 0 : Math.floor((Date.now() - busySince) / 1000))
  function warnBehind(why: string): void {
    if (Date.now() - lastBehindWarn < 10_000) return
    lastBehindWarn = Date.now()
    log.warn(
      { inFlight, peak: stats.peak, busySeconds: busySeconds() },
      `the hub is behind its MQTT broker: ${why}. ${opts.behindAdvice}`,
    )
  }

  // Once a second: marks of messages acknowledged long enough ago are forgotten, in one write;
  // a busy stretch that has lasted BEHIND_AFTER_S is said out loud.
  let behindCounted = -1
  const tick = setInterval(() => {
    // Waiting for disk is not falling behind the broker: the disk guard has said why, once.
    if (opts.disk?.refusing()) busySince = inFlight > 0 ? Date.now() : -1
    const due = forgetting.due(Date.now() - FORGET_AFTER_MS)
    if (due.length > 0) opts.engine?.forgetOnce?.(due)
    if (busySince >= 0 && busySeconds() >= BEHIND_AFTER_S) {
      if (behindCounted !== busySince) {
        behindCounted = busySince
        stats.behind++
      }
      warnBehind(`messages have been in flight without a break for ${busySeconds()} s (${inFlight} now)`)
    }
  }, 1000)
  tick.unref()

  return {
    handle,
    take(topic, payload, once, after, keep = false) {
      inFlight++
      if (inFlight > stats.peak) stats.peak = inFlight
      if (busySince < 0) busySince = Date.now()
      handle(topic, payload, Date.now(), once, keep)
        .then((results) => {
          if (results.some((r) => r.ok && r.decision.duplicate)) stats.repeats++
        })
        .catch((err: unknown) => log.error({ topic, err: errorText(err) }, 'trigger dispatch failed'))
        .finally(() => {
          inFlight--
          if (inFlight === 0) busySince = -1
          after()
        })
    },
    inFlight: () => inFlight,
    cap,
    paused() {
      stats.paused++
      warnBehind(`${inFlight} messages are being admitted (the cap): ${opts.atCap}`)
    },
    forgetLater(marks) {
      forgetting.add(marks, Date.now())
    },
    setPlan(next) {
      plan = next
    },
    backlog: () => ({ inFlight, ...stats, busySeconds: busySeconds(), cap }),
    stop() {
      clearInterval(tick)
    },
  }
}

/**
 * Marks waiting to be forgotten, in one bucket a second: their sop, key and fingerprint side by
 * side in one array, the strings the engine's marks already hold. At thousands of messages a
 * second, FORGET_AFTER_MS of them are hundreds of thousands of marks; an object, an array and a
 * timestamp per message for each of them was about 260 bytes of heap, a bucket's slots are 24.
 */
export class ForgetQueue {
  private readonly buckets: { first: number; last: number; flat: string[] }[] = []
  private head = 0

  /** Marks acknowledged at `now`. */
  add(marks: readonly OnceMark[], now: number): void {
    if (marks.length === 0) return
    let b = this.buckets[this.buckets.length - 1]
    if (b === undefined || this.buckets.length === this.head || now - b.first >= 1000) {
      b = { first: now, last: now, flat: [] }
      this.buckets.push(b)
    }
    // A bucket is due once its latest mark is: none goes before its time.
    b.last = Math.max(b.last, now)
    for (const m of marks) b.flat.push(m.sop, m.key, m.fingerprint)
  }

  /** Takes out the marks acknowledged at or before `cutoff`. */
  due(cutoff: number): OnceMark[] {
    const out: OnceMark[] = []
    while (this.head < this.buckets.length && this.buckets[this.head]!.last <= cutoff) {
      const { flat } = this.buckets[this.head++]!
      for (let i = 0; i < flat.length; i += 3)
        out.push({ sop: flat[i]!, key: flat[i + 1]!, fingerprint: flat[i + 2]! })
    }
    if (this.head === this.buckets.length) {
      this.buckets.length = 0
      this.head = 0
    } else if (this.head > 64) {
      this.buckets.splice(0, this.head)
      this.head = 0
    }
    return out
  }

  /** Marks waiting. */
  get size(): number {
    let n = 0
    for (let i = this.head; i < this.buckets.length; i++) n += this.buckets[i]!.flat.length / 3
    return n
  }
}
