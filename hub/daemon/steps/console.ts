// The web console, when `[console] enabled` and this build has it: started before any trigger or
// port, so it sees every run and every board change.
import type { HubEngine } from '../../../sops/hub-engine.ts'
import type { RunningConsole } from '../../console/index.ts'
import type { DiskGuard } from '../../disk/guard.ts'
import type { Flasher } from '../../flash/flasher.ts'
import type { AttestationParts, BridgeLike } from '../parts.ts'
import type { StartContext } from './context.ts'
import type { LoadedSops } from './sops.ts'

export async function startConsole(
  { config, log, parts, closers }: StartContext,
  o: {
    engine: HubEngine
    loaded: LoadedSops
    boardNames: string[]
    bridge: BridgeLike | null
    attestation: AttestationParts
    disk: DiskGuard
    flasher: Flasher | null
  },
): Promise<RunningConsole | null> {
  if (!(parts.console && config.console.enabled)) return null
  const { engine, loaded, boardNames, bridge, attestation, disk, flasher } = o
  const c = await parts.console({
    config: config.console,
    dataDir: config.dataDir,
    engine,
    sops: () => loaded.sops,
    diagnostics: () => loaded.diagnostics,
    sopsDir: config.sopsDir,
    boards: boardNames,
    bridge,
    boardTimeoutMs: config.tools.boardTimeoutMs,
    attestation: attestation.console ?? null,
    disk,
    flash: flasher
      ? {
          flasher,
          hasProfile: (board: string) => config.boards.some((b) => b.name === board && b.flash),
          helloTimeoutMs: config.flash.helloTimeoutMs,
        }
      : null,
    log,
  })
  closers.add('console', () => c.close())
  return c
}
