// The watchdog's clock: every `pingEveryMs` (half of systemd's WatchdogSec) it measures how late
// it ran, reads the store heartbeat started at the previous check, asks health.ts, and pings
// only if the verdict says so; then it starts the next heartbeat. The STATUS= line follows the
// verdict, sent when it changes. A withheld ping is logged at each check, so the journal says
// why systemd restarted the hub.
import type { Log } from '../log.ts'
import { type HealthBounds, type Verdict, decideHealth } from './health.ts'
import { StoreProbe } from './store-probe.ts'

export interface PingerOptions {
  pingEveryMs: number
  /** Sends one notify message (notify.ts). */
  send(fields: Record<string, string>): void
  /** One synced write through the engine store's committer. */
  heartbeat(): Promise<void>
  refusing(): boolean
  /** Stores that refuse writes with room on the disk (hub/disk/refusing.ts). */
  failedStores?(): readonly { store: string; error: string }[]
  /** What STATUS= says while the hub is healthy. */
  serving: string
  log: Log
  /** Monotonic milliseconds (performance.now). */
  now?: () => number
}

export interface Pinger {
  /** What STATUS= says while healthy (after a reload); the current status is sent again now. */
  setServing(status: string): void
  stop(): void
}

export function boundsFor(pingEveryMs: number): HealthBounds {
  // Half a ping interval either way: a check that late, or a heartbeat that slow, already leaves
  // the next ping at or past systemd's deadline.
  return { maxLagMs: pingEveryMs / 2, maxWriteMs: pingEveryMs / 2 }
}

export function startPinger(o: PingerOptions): Pinger {
  const now = o.now ?? (() => performance.now())
  const bounds = boundsFor(o.pingEveryMs)
  const probe = new StoreProbe(o.heartbeat, now)
  let serving = o.serving
  let verdict: Verdict = { ping: true, note: null }
  let statusSent = serving
  let timer: NodeJS.Timeout | null = null
  let stopped = false

  const statusOf = (v: Verdict): string =>
    v.note === null ? serving : v.ping ? v.note : `unhealthy: ${v.note}`
  const sendStatus = (): void => {
    const status = statusOf(verdict)
    if (status === statusSent) return
    statusSent = status
    o.send({ STATUS: status })
  }

  const check = (dueAt: number): void => {
    if (stopped) return
    const at = now()
    const next = decideHealth(
      {
        lagMs: Math.max(0, at - dueAt),
        store: probe.state(),
        refusing: o.refusing(),
        failedStores: o.failedStores?.() ?? [],
      },
      bounds,
    )
    if (!next.ping) o.log.warn({ watchdog: 'withheld' }, `watchdog ping withheld: ${next.note}`)
    else if (!verdict.ping) o.log.info({ watchdog: 'resumed' }, 'watchdog pings resumed')
    verdict = next
    sendStatus()
    if (verdict.ping) o.send({ WATCHDOG: '1' })
    probe.begin()
    schedule(now())
  }
  const schedule = (from: number): void => {
    const dueAt = from + o.pingEveryMs
    timer = setTimeout(() => check(dueAt), o.pingEveryMs)
    // The hub's own parts keep the process alive; the watchdog must not hold it after close.
    timer.unref()
  }

  probe.begin()
  schedule(now())
  return {
    setServing(status) {
      serving = status
      // Someone else's STATUS= (reloading) went out since: say ours again whatever it was.
      statusSent = ''
      sendStatus()
    },
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}
