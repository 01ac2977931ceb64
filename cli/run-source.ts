// Where `svc sop runs|status|logs` read run records: the running hub's local API when a hub
// runs, else the hub's stored records (its data folder's `engine/` LevelDB). Not both: while a
// hub runs it holds the store's lock, and when none runs there is no API. The source is named
// in the output, so a reader knows whether what they see is live.
//
// A reader drops nothing: the stored records are opened with bounds no run is past, so a command
// run while the hub is stopped never applies retention (hub/engine/README.md, "Retention") with
// bounds other than the hub's; the hub applies its own when it starts.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { type RunFilter, RunFilterError, type RunPage } from '../sops/hub-engine.ts'
import type { RunRecord } from '../sops/run/record.ts'
import type { HubStatus } from '../hub/api/status.ts'
import { readApiInfo } from '../hub/api/token.ts'
import type { HistoryBounds } from '../hub/engine/log/retention.ts'
import { type HistoryView, historyView } from '../hub/history/view.ts'
import { svcPaths } from '../hub/paths.ts'
import { processAlive, requestHub } from './hub-client.ts'
import { type CliIo, UsageError, UserError } from './io.ts'

export interface RunSource {
  /** Where the records come from, for the output's header. */
  label: string
  getRun(id: string): Promise<RunRecord | undefined>
  queryRuns(filter: RunFilter): Promise<RunPage>
  /**
   * How far back the history reaches (hub/history/view.ts): the running hub's `GET /hub/status`,
   * or the stored log with hub.toml's `[history]`; null when neither can say.
   */
  history(): Promise<HistoryView | null>
  close(): Promise<void>
}

export async function openRunSource(io: CliIo): Promise<RunSource> {
  const paths = svcPaths(io.env)
  const info = await readApiInfo(paths.apiInfo)
  if (info.ok && (info.value.pid === undefined || processAlive(info.value.pid)))
    return apiSource(io, info.value.url)
  // The info file of a hub that died names its data folder; else the one `svc hub` would use.
  const { loadConfig } = await import('../hub/daemon/config.ts')
  const { historyBounds } = await import('../hub/engine/log/retention.ts')
  const cfg = await loadConfig(undefined, io.env)
  const dataDir = (info.ok ? info.value.dataDir : undefined) ?? (cfg.ok ? cfg.config.dataDir : paths.data)
  return storeSource(join(dataDir, 'engine'), cfg.ok ? historyBounds(cfg.config.history) : null)
}

function apiSource(io: CliIo, url: string): RunSource {
  return {
    label: `the running hub (${url})`,
    async getRun(id) {
      const r = await requestHub(io, 'GET', `/sop/runs/${encodeURIComponent(id)}`)
      if (r.status === 404) return undefined
      if (r.status >= 400)
        throw new UserError((r.body as { error?: string }).error ?? `the hub answered ${r.status}`)
      return (r.body as { run: RunRecord }).run
    },
    async queryRuns(f) {
      const q = new URLSearchParams()
      for (const [k, v] of Object.entries(f)) if (v !== undefined) q.set(k, String(v))
      const r = await requestHub(io, 'GET', `/sop/runs?${q}`)
      const error = (r.body as { error?: string }).error
      // The filter is the command line's: a refused one is a usage error, as from the store.
      if (r.status === 400) throw new UsageError(error ?? 'the hub refused the filter')
      if (r.status >= 400) throw new UserError(error ?? `the hub answered ${r.status}`)
      return r.body as RunPage
    },
    async history() {
      const r = await requestHub(io, 'GET', '/hub/status')
      return r.status === 200 ? ((r.body as Partial<HubStatus>).history ?? null) : null
    },
    close: async () => {},
  }
}

/** `bounds`: hub.toml's `[history]`, shown and never applied; null when hub.toml does not load. */
async function storeSource(path: string, bounds: HistoryBounds | null): Promise<RunSource> {
  if (!existsSync(join(path, 'CURRENT')))
    throw new UserError(
      `no hub is running, and no run records are stored at ${path}; start one with \`svc hub run\``,
    )
  const { checkReadable } = await import('../hub/stores/check.ts')
  await checkReadable(dirname(path), 'engine').catch((err: Error) => {
    throw new UserError(err.message)
  })
  const { DEFAULT_BOUNDS, EngineStore } = await import('../hub/engine/store.ts')
  let store: Awaited<ReturnType<typeof EngineStore.open>>
  try {
    // Only read: the hub applies its own [history] when it next starts.
    store = await EngineStore.open(path, { history: bounds ?? DEFAULT_BOUNDS, retention: false })
  } catch (err) {
    const e = err as Error & { cause?: Error }
    throw new UserError(
      `the run records at ${path} are in use by another process (a hub starting or stopping?): ${e.cause?.message ?? e.message}`,
    )
  }
  return {
    label: `the stored records in ${path} (no hub is running)`,
    getRun: (id) => store.getRun(id),
    queryRuns: async (f) => {
      try {
        return await store.queryRuns(f)
      } catch (err) {
        if (err instanceof RunFilterError) throw new UsageError(err.message)
        throw err
      }
    },
    async history() {
      // The oldest run is read when the store opens (no segment dropped: `retention: false`).
      await store.prune()
      const h = store.history()
      if (!bounds) return null
      return historyView({ ...h, maxAgeMs: bounds.maxAgeMs, maxBytes: bounds.maxBytes })
    },
    close: () => store.close(),
  }
}
