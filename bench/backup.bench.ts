// `svc hub backup` and `svc hub restore` at 100,000 stored runs (bench/fixtures/many-runs.ts),
// beside the baseline measured in the same process over the same store: a plain recursive copy
// of the closed store's folder (what the copy before an upgrade does, hub/stores/README.md).
// Prints for the archive (gzip, checked against its manifest as it is read back) and the
// restore (staged, checked, the engine's records moved into a new history log): seconds, runs
// a second, and the archive's size against the store's.
//
//   npm run bench -- backup          (RUNS=100000 by default)
import { createWriteStream } from 'node:fs'
import { cp, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { writeArchive } from '../hub/backup/archive.ts'
import { backupFiles } from '../hub/backup/files.ts'
import { openStoresForBackup } from '../hub/backup/offline.ts'
import { restoreArchive } from '../hub/backup/restore.ts'
import { writeManyRuns } from './fixtures/many-runs.ts'

const RUNS = Number(process.env.RUNS ?? 100_000)

async function bytesIn(dir: string): Promise<number> {
  let n = 0
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) n += (await stat(join(e.parentPath, e.name))).size
  return n
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`
const root = await mkdtemp(join(tmpdir(), 'svc-bench-backup-'))
try {
  const home = join(root, 'home')
  const data = join(home, 'data')
  await mkdir(data, { recursive: true })
  await writeManyRuns(join(data, 'engine'), { n: RUNS })
  const storeBytes = await bytesIn(join(data, 'engine'))

  let t0 = performance.now()
  await cp(join(data, 'engine'), join(root, 'copy'), { recursive: true })
  const copyS = (performance.now() - t0) / 1000

  const file = join(root, 'hub.tar.gz')
  t0 = performance.now()
  const stores = await openStoresForBackup(data)
  const sink = createWriteStream(file)
  const closed = new Promise<void>((resolve) => sink.on('close', () => resolve()))
  const manifest = await writeArchive(sink, {
    files: await backupFiles({ home, dataDir: data, sopsDir: join(home, 'sops'), configFile: null }),
    stores: stores.stores(true),
    history: true,
  })
  await closed
  await stores.close()
  const backupS = (performance.now() - t0) / 1000
  const archiveBytes = (await stat(file)).size

  const to = join(root, 'restored')
  await mkdir(to)
  t0 = performance.now()
  const r = await restoreArchive(
    file,
    { home: to, dataDir: join(to, 'data'), sopsDir: join(to, 'sops') },
    null,
  )
  const restoreS = (performance.now() - t0) / 1000
  if (r.runs.finished + r.runs.unfinished !== RUNS)
    throw new Error(`restored ${JSON.stringify(r.runs)} of ${RUNS} runs`)

  const rate = (s: number) => `${Math.round(RUNS / s).toLocaleString('en-US')} runs/s`
  console.log(
    `store: ${RUNS.toLocaleString('en-US')} runs, ${mb(storeBytes)}; engine entries ${manifest.stores.engine?.entries}`,
  )
  console.log(`baseline, a copy of the closed store's folder: ${copyS.toFixed(2)} s (${rate(copyS)})`)
  console.log(
    `svc hub backup (archive, gzip):               ${backupS.toFixed(2)} s (${rate(backupS)}), ${mb(archiveBytes)} (${(archiveBytes / storeBytes).toFixed(2)}x the store), ${(backupS / copyS).toFixed(1)}x the copy`,
  )
  console.log(
    `svc hub restore (staged, checked, moved into a log): ${restoreS.toFixed(2)} s (${rate(restoreS)}), ${(restoreS / copyS).toFixed(1)}x the copy`,
  )
} finally {
  await rm(root, { recursive: true, force: true })
}
