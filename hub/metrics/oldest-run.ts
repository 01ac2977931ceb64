// When the engine's oldest run was created: how far back the hub's run history goes. The run
// index answers newest first only (hub/engine/run-index.ts), so the oldest is found by bisecting
// on `until` with pages of one run: about 52 seeks of the index, once. The engine never deletes
// a run, so the answer holds for the life of the process and later scrapes cost nothing.
import type { HubEngine } from '../../sops/hub-engine.ts'

/** The highest creation time the run index can key (ten base-36 digits of ms). */
const INDEX_END = 36 ** 10 - 1

export function oldestRunFinder(engine: Pick<HubEngine, 'queryRuns'>): () => Promise<number | null> {
  let found: number | null = null
  const before = async (t: number) => (await engine.queryRuns({ until: t, limit: 1 })).runs[0]
  return async () => {
    if (found !== null) return found
    if ((await before(INDEX_END)) === undefined) return null
    // Invariant: no run was created before `lo`, some run was created before `hi`.
    let lo = 0
    let hi = INDEX_END
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2)
      if ((await before(mid)) === undefined) lo = mid
      else hi = mid
    }
    const oldest = await before(hi)
    if (oldest) found = oldest.createdAt
    return oldest?.createdAt ?? null
  }
}
