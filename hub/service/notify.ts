// systemd's notify protocol (sd_notify) from the hub's own process: `KEY=VALUE` lines, one
// datagram per message, on the socket systemd names in $NOTIFY_SOCKET. Node cannot open a unix
// datagram socket, so hub/service/notify-socket.pl connects it and execs the hub, which inherits
// it as SVC_NOTIFY_FD; a write(2) on a connected datagram socket is one datagram, sent under the
// hub's own PID (NotifyAccess=main).
import { fstatSync, writeSync } from 'node:fs'
import type { Log } from '../log.ts'
import { type NotifyTarget, notifyMessage } from './notify-env.ts'
import { errorText } from '../../errors/text.ts'

/** CLOCK_MONOTONIC in microseconds (libuv's hrtime), which RELOADING=1 carries (sd_notify(3)). */
export function monotonicUsec(): string {
  return String(process.hrtime.bigint() / 1000n)
}

export interface Notifier {
  /** Sends one message; false if it could not go (the reason logged once per kind of failure). */
  send(fields: Record<string, string | number>): boolean
}

/**
 * The notifier for `target`, or null when there is nothing to send to. A descriptor that is not
 * a socket is refused here, so a stray SVC_NOTIFY_FD never has the hub write into a file.
 */
export function openNotifier(target: NotifyTarget, log: Log): Notifier | null {
  if (target.kind === 'none') return null
  if (target.kind === 'unusable') {
    log.warn({ notify: 'off' }, target.reason)
    return null
  }
  const { fd } = target
  try {
    if (!fstatSync(fd).isSocket()) {
      log.warn({ fd }, `SVC_NOTIFY_FD=${fd} is not a socket: no service notifications`)
      return null
    }
  } catch (err) {
    log.warn({ fd, err: errorText(err) }, `SVC_NOTIFY_FD=${fd} is not open: no service notifications`)
    return null
  }
  let lastError: string | null = null
  return {
    send(fields) {
      try {
        // Synchronous on purpose: one datagram on a non-blocking socket, no thread-pool job
        // that a stuck disk (LevelDB's jobs share the pool) could hold back.
        writeSync(fd, Buffer.from(notifyMessage(fields)))
        lastError = null
        return true
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? errorText(err)
        if (code !== lastError)
          log.warn(
            { fd, err: code },
            'cannot send to the service manager (systemd restarting, or not reading?): this message is lost',
          )
        lastError = code
        return false
      }
    },
  }
}
