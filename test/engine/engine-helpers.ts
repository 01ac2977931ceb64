// Starting a real engine (real LevelDB in a temp folder) for a test, closed by the test.
import { createEngine, type EngineOptions } from '../../hub/engine/index.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { Sop } from '../../sops/types.ts'
import { tempDir } from '../helpers/tmp.ts'
import { memoryTools } from './helpers.ts'

interface T {
  teardown(fn: () => unknown): void
}

export async function startEngine(
  t: T,
  sops: Sop[],
  over: Omit<Partial<EngineOptions>, 'tools'> & { tools?: ReturnType<typeof memoryTools> } = {},
) {
  const dir = over.dbPath ?? (await tempDir(t, 'svc-engine-'))
  const tools = over.tools ?? memoryTools()
  const engine: HubEngine = await createEngine({ sops, dbPath: dir, ...over, tools: tools.registry })
  let closed = false
  t.teardown(() => (closed ? undefined : engine.close()))
  return {
    engine,
    tools,
    dir,
    close: async () => {
      closed = true
      await engine.close()
    },
  }
}
