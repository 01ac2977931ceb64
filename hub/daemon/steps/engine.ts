// The tools and the SOP engine they run in. The sop_* tools reach the engine they are
// registered in, so they get it late, through a getter.
import { join } from 'node:path'
import type { HubEngine } from '../../../sops/hub-engine.ts'
import type { Sop } from '../../../sops/types.ts'
import type { PublishPort } from '../../../tools/mqtt_publish.ts'
import { buildToolRegistry } from '../../../tools/registry.ts'
import { createSopApproveTool } from '../../../tools/sop_approve.ts'
import { createSopExecuteTool } from '../../../tools/sop_execute.ts'
import { createSopStatusTool } from '../../../tools/sop_status.ts'
import type { ToolRegistry } from '../../../tools/types.ts'
import type { DiskGuard } from '../../disk/guard.ts'
import { type RunningEngine, createEngine } from '../../engine/index.ts'
import { historyBounds } from '../../engine/log/retention.ts'
import type { AttestationParts, BridgeLike } from '../parts.ts'
import type { StartContext } from './context.ts'

export interface HubTools {
  tools: ToolRegistry
  /** Hands the sop_* tools the engine, once it exists. */
  engineReady(engine: HubEngine): void
}

export function buildTools(
  { config }: StartContext,
  o: { publish: PublishPort; bridge: BridgeLike | null; attestation: AttestationParts },
): HubTools {
  const { publish, bridge, attestation } = o
  let engineRef: HubEngine | undefined
  const getEngine = (): HubEngine | undefined => engineRef
  const sopTools = [
    createSopExecuteTool(getEngine),
    createSopStatusTool(getEngine),
    createSopApproveTool(getEngine),
  ]
  const registry = buildToolRegistry({
    publish,
    ...(bridge ? { boards: bridge } : {}),
    http: config.tools.httpRequest,
    httpTimeoutMs: config.tools.httpTimeoutMs,
    boardTimeoutMs: config.tools.boardTimeoutMs,
    extra: [...attestation.tools, ...sopTools],
  })
  if (!registry.ok) throw new Error(registry.error)
  return {
    tools: registry.tools,
    engineReady(engine) {
      engineRef = engine
    },
  }
}

export async function startEngine(
  { config, log, parts, closers }: StartContext,
  o: { sops: Sop[]; tools: HubTools; disk: DiskGuard },
): Promise<RunningEngine> {
  const { sops, tools, disk } = o
  const engine = await createEngine({
    sops,
    tools: tools.tools,
    dbPath: join(config.dataDir, 'engine'),
    history: historyBounds(config.history),
    commitWindowMs: config.history.commitWindowMs,
    log,
    disk,
    ...(parts.agent ? { agent: parts.agent } : {}),
  })
  tools.engineReady(engine)
  closers.add('engine', () => engine.close())
  disk.addStore({
    name: 'engine',
    path: join(config.dataDir, 'engine'),
    reopen: () => engine.reopenStore(),
  })
  return engine
}
