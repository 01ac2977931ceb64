// What systemd asks of the hub, read from the environment it (and hub/service/notify-socket.pl)
// set: where notify messages go, and how often the watchdog wants a ping. Pure: notify.ts sends.
/** Where the hub's messages go. */
export type NotifyTarget =
  /** No service manager listens: nothing is sent, nothing is said. */
  | { kind: 'none' }
  | { kind: 'fd'; fd: number }
  /** A manager listens, but the hub cannot reach it: said once in the log. */
  | { kind: 'unusable'; reason: string }

/** The wrapper that connects the notify socket for the hub (its header says why). */
export const WRAPPER = 'hub/service/notify-socket.pl'

export function notifyTarget(env: NodeJS.ProcessEnv): NotifyTarget {
  const fd = env.SVC_NOTIFY_FD
  if (fd !== undefined && fd !== '') {
    if (!/^\d+$/.test(fd) || Number(fd) < 3)
      return {
        kind: 'unusable',
        reason: `SVC_NOTIFY_FD=${fd}: not a descriptor the wrapper opens (3 or more)`,
      }
    return { kind: 'fd', fd: Number(fd) }
  }
  const socket = env.NOTIFY_SOCKET
  if (socket !== undefined && socket !== '')
    return {
      kind: 'unusable',
      reason: `NOTIFY_SOCKET=${socket} is set, but the hub was not started through ${WRAPPER}, which connects it (Node cannot open a unix datagram socket): systemd will hear neither READY=1 nor the watchdog. \`svc hub install-service\` writes a unit that starts the hub that way`,
    }
  return { kind: 'none' }
}

/** The watchdog systemd asks for ($WATCHDOG_USEC, for the process $WATCHDOG_PID when set). */
export type WatchdogAsk =
  | { kind: 'off' }
  | { kind: 'on'; pingEveryMs: number }
  | { kind: 'bad'; reason: string }

export function watchdogAsk(env: NodeJS.ProcessEnv, pid: number): WatchdogAsk {
  const usec = env.WATCHDOG_USEC
  if (usec === undefined || usec === '') return { kind: 'off' }
  // sd_watchdog_enabled(3): a WATCHDOG_PID of another process means the watchdog is not ours.
  const owner = env.WATCHDOG_PID
  if (owner !== undefined && owner !== '' && owner !== String(pid)) return { kind: 'off' }
  if (!/^\d+$/.test(usec) || Number(usec) === 0)
    return { kind: 'bad', reason: `WATCHDOG_USEC=${usec}: not a positive number of microseconds` }
  // Half the interval, as sd_watchdog_enabled(3) advises: one late ping is not yet a restart.
  return { kind: 'on', pingEveryMs: Number(usec) / 2000 }
}

/**
 * One message: `KEY=VALUE` lines. A value is one line (a newline would start another
 * assignment), so newlines in it become spaces.
 */
export function notifyMessage(fields: Record<string, string | number>): string {
  return Object.entries(fields)
    .map(([k, v]) => `${k}=${String(v).replace(/[\r\n]+/g, ' ')}`)
    .join('\n')
}
