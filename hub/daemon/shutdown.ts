// Graceful shutdown: the first SIGTERM/SIGINT closes the hub in order (bridge, triggers, engine
// flushed, session, broker) and exits 0; a second signal while closing exits at once (130), for
// an operator who means it. SIGHUP reloads the SOPs.
import type { Log } from '../log.ts'
import { errorText } from '../../errors/text.ts'

export interface Stoppable {
  close(): Promise<void>
  reload?(): Promise<void>
}

export function installSignalHandlers(
  hub: Stoppable,
  log: Log,
  exit: (code: number) => void = (c) => process.exit(c),
): () => void {
  let stopping = false
  const onStop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn({ signal }, 'second signal while stopping: exiting now')
      exit(130)
      return
    }
    stopping = true
    log.info({ signal }, 'stopping')
    hub.close().then(
      () => exit(0),
      (err: unknown) => {
        log.error({ err: errorText(err) }, 'hub did not stop cleanly')
        exit(1)
      },
    )
  }
  const onHup = (): void => {
    if (!hub.reload || stopping) return
    log.info('SIGHUP: reloading SOPs')
    hub
      .reload()
      .catch((err: unknown) =>
        log.error({ err: errorText(err) }, 'reload failed; the previous SOPs stay loaded'),
      )
  }
  process.on('SIGTERM', onStop)
  process.on('SIGINT', onStop)
  process.on('SIGHUP', onHup)
  return () => {
    process.off('SIGTERM', onStop)
    process.off('SIGINT', onStop)
    process.off('SIGHUP', onHup)
  }
}
