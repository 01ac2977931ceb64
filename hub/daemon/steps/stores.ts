// The start's first steps: the data folder's stores checked before any opens, and the disk guard
// every store reports its failed writes to.
import { mkdir } from 'node:fs/promises'
import { type DiskGuard, createDiskGuard } from '../../disk/guard.ts'
import { checkStores } from '../../stores/check.ts'
import type { StartContext } from './context.ts'

export async function checkStartStores({ config, log }: StartContext): Promise<void> {
  await mkdir(config.dataDir, { recursive: true })
  // Before any store opens (hub/stores/README.md, "Format versions and upgrades"): one that is
  // newer than this svc, or will not open, stops the start with one line; an older one is
  // copied beside itself and upgraded.
  await checkStores({
    dataDir: config.dataDir,
    stores: config.broker.url === null ? ['engine', 'broker'] : ['engine'],
    ifPresent: ['attest'],
    reserve: { mb: config.disk.reserveMb, percent: config.disk.reservePercent },
    log,
  })
}

/**
 * Free space on the data folder and each store's (hub/disk/): below the reserve no new work
 * is taken, and a store whose write failed is reopened once there is room.
 */
export async function startDiskGuard({ config, log, closers }: StartContext): Promise<DiskGuard> {
  const disk = createDiskGuard({
    dataDir: config.dataDir,
    reserve: { mb: config.disk.reserveMb, percent: config.disk.reservePercent },
    log,
  })
  await disk.start()
  closers.add('disk guard', async () => disk.stop())
  return disk
}
