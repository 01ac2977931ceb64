// The broker: an embedded Aedes in the hub's process, or none when `broker.url` names an external
// one. The embedded broker's store is guarded by the disk guard like the others.
import { join } from 'node:path'
import type { Sop } from '../../../sops/types.ts'
import { accountsPath } from '../../broker/accounts-file.ts'
import { type EmbeddedBroker, startBroker } from '../../broker/broker.ts'
import type { DiskGuard } from '../../disk/guard.ts'
import { subscriptionFilters } from '../../triggers/dispatch.ts'
import { buildPlan } from '../../triggers/plan.ts'
import { HUB_STATE_TOPIC, PENDING_TOPIC } from '../../mqtt-state/payloads.ts'
import type { StartContext } from './context.ts'

export interface HubBroker {
  /** Null on an external broker. */
  broker: EmbeddedBroker | null
  /** The URL the hub's session connects to. */
  brokerUrl: string
}

export async function startEmbeddedBroker(
  { config, log, closers }: StartContext,
  disk: DiskGuard,
  sops: readonly Sop[],
): Promise<HubBroker> {
  const url = config.broker.url
  if (url !== null) {
    log.info({ url }, 'using external broker; no embedded broker started')
    return { broker: null, brokerUrl: url }
  }
  const broker = await startBroker({
    host: config.broker.host,
    port: config.broker.port,
    wsPort: config.broker.wsPort,
    dbPath: join(config.dataDir, 'broker'),
    log,
    accountsFile: accountsPath(config.dataDir),
    hubBoards: config.boards.map((b) => b.name),
    hubClientId: config.broker.clientId,
    tls: config.broker.tls,
    triggerFilters: subscriptionFilters(buildPlan(sops)),
    volatileRetained: [HUB_STATE_TOPIC, PENDING_TOPIC],
    onStoreError: (err) => disk.writeFailed('broker', err),
  })
  const b = broker
  closers.add('broker', () => b.close())
  disk.addStore({ name: 'broker', path: join(config.dataDir, 'broker'), reopen: () => b.reopenStore() })
  // Clients' events wait before they are published while the disk refuses (trigger-feed.ts).
  b.triggers.hold(disk.refusing())
  disk.onChange((v) => b.triggers.hold(v.state === 'refusing'))
  disk.countHeld(() => (disk.refusing() ? b.triggers.waiting() : 0))
  return { broker, brokerUrl: broker.url }
}
