// The hub as a systemd service (hub/README.md, "Watchdog and service"): READY=1 once it serves,
// STATUS= lines, RELOADING=1 … READY=1 around a SIGHUP reload, STOPPING=1 when it stops, and the
// watchdog pings (pinger.ts) while it is healthy. Null when no service manager listens, so the
// hub composes it the same way wherever it runs.
import type { Log } from '../log.ts'
import { notifyTarget, watchdogAsk } from './notify-env.ts'
import { monotonicUsec, openNotifier } from './notify.ts'
import { type Pinger, startPinger } from './pinger.ts'
import { refusingHonestly, storesRefusingWrites } from '../disk/refusing.ts'

/** What the hub serves, for its STATUS= line (`systemctl status svc-hub`). */
export interface Serving {
  sops: number
  /** SOP files that did not load. */
  invalid: number
  boards: number
}

export function servingStatus(s: Serving): string {
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`
  return `serving: ${plural(s.sops, 'SOP')}${s.invalid > 0 ? ` (${s.invalid} not loaded)` : ''}, ${plural(s.boards, 'board')}`
}

export interface HubService {
  status(text: string): void
  /** READY=1: the hub serves (broker listening, API up, engine recovered); the pings start. */
  ready(serving: Serving, heartbeat: () => Promise<void>): void
  reloading(): void
  reloaded(serving: Serving): void
  stopping(): void
}

export function startService(env: NodeJS.ProcessEnv, log: Log, pid = process.pid): HubService | null {
  const notifier = openNotifier(notifyTarget(env), log)
  if (!notifier) return null
  const send = (fields: Record<string, string>): void => void notifier.send(fields)
  const ask = watchdogAsk(env, pid)
  if (ask.kind === 'bad') log.warn({ watchdog: 'off' }, `${ask.reason}: no watchdog pings`)
  let pinger: Pinger | null = null
  let stopped = false
  return {
    status: (text) => send({ STATUS: text }),
    ready(what, heartbeat) {
      if (stopped || pinger) return
      const serving = servingStatus(what)
      send({ READY: '1', STATUS: serving })
      if (ask.kind !== 'on') return
      log.info(
        { pingEveryMs: ask.pingEveryMs },
        'systemd watchdog: pinging while the loop turns and the store takes writes',
      )
      pinger = startPinger({
        pingEveryMs: ask.pingEveryMs,
        send,
        heartbeat,
        refusing: refusingHonestly,
        failedStores: storesRefusingWrites,
        serving,
        log,
      })
    },
    reloading() {
      if (!stopped) send({ RELOADING: '1', MONOTONIC_USEC: monotonicUsec(), STATUS: 'reloading SOPs' })
    },
    reloaded(what) {
      if (stopped) return
      const serving = servingStatus(what)
      send({ READY: '1' })
      // The pinger sends STATUS= when the hub is healthy, and keeps the unhealthy one otherwise.
      if (pinger) pinger.setServing(serving)
      else send({ STATUS: serving })
    },
    stopping() {
      if (stopped) return
      stopped = true
      pinger?.stop()
      send({ STOPPING: '1', STATUS: 'stopping' })
    },
  }
}
