// The hub's own embedded broker (Aedes with LevelDB persistence) on a free loopback port, its
// database in a temp folder unless the test names one, closed when the test ends.
import { join } from 'node:path'
import { Level } from 'level'
import { type EmbeddedBroker, startBroker } from '../../hub/broker/broker.ts'
import { silentLog } from '../../hub/log.ts'
import { tempDir, type Teardown } from '../helpers/tmp.ts'

export async function startEmbeddedBroker(
  t: Teardown,
  opts: {
    dbPath?: string
    wsPort?: number | null
    port?: number
    triggerFilters?: string[]
    hubClientId?: string
    volatileRetained?: string[]
  } = {},
): Promise<EmbeddedBroker> {
  const dbPath = opts.dbPath ?? join(await tempDir(t), 'broker')
  const broker = await startBroker({
    host: '127.0.0.1',
    port: opts.port ?? 0,
    wsPort: opts.wsPort ?? null,
    dbPath,
    log: silentLog,
    ...(opts.triggerFilters ? { triggerFilters: opts.triggerFilters } : {}),
    ...(opts.hubClientId ? { hubClientId: opts.hubClientId } : {}),
    ...(opts.volatileRetained ? { volatileRetained: opts.volatileRetained } : {}),
  })
  t.teardown(() => broker.close())
  return broker
}

/** The retained topics a broker's LevelDB holds (aedes-persistence-level's `retained:` keys), sorted; the broker closed. */
export async function storedRetained(dbPath: string): Promise<string[]> {
  const db = new Level<string, Buffer>(dbPath, { valueEncoding: 'buffer' })
  const topics: string[] = []
  for await (const key of db.keys({ gte: 'retained:', lt: 'retained;' }))
    topics.push(key.slice('retained:'.length))
  await db.close()
  return topics.sort()
}
