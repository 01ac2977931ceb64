// The hub's stores checked at start, before any of them opens (hub/stores/README.md, "Format
// versions and upgrades"): a store written by a newer svc, or one that will not open, stops the
// start with one line naming the store, the file and the fix, and nothing is written; an older
// store is copied beside itself, upgraded with progress in the log, and its new version recorded;
// a store of today's layout with no version recorded gets it.
import { mkdir, stat, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import type { Log } from '../log.ts'
import { type ReserveSetting, reserveBytes } from '../disk/reserve.ts'
import { backupBeside } from './backup-beside.ts'
import { inspectEngine } from './engine-format.ts'
import { FORMAT_FILE, readFormatFile, writeFormatFile } from './format-file.ts'
import { FORMATS, type StoreName, StoreRefused, newerFormat } from './format.ts'
import { holdsDatabase, probeLevel } from './level-probe.ts'
import { UPGRADES } from './upgrades.ts'

export interface CheckOptions {
  dataDir: string
  /** Stores checked, and made with their version when their folder does not exist yet. */
  stores: readonly StoreName[]
  /** Stores checked only when their folder exists (the attestation store, made by its part). */
  ifPresent?: readonly StoreName[]
  /** The hub's disk reserve (`[disk]`): an upgrade leaves it free. */
  reserve: ReserveSetting
  log: Log
  now?: () => Date
}

interface Found {
  store: StoreName
  dir: string
  /** null: nothing there yet. */
  format: number | null
  /** Whether the version is recorded where this svc looks (false for today's broker and attest stores). */
  recorded: boolean
  /** Runs in an engine store of format 1, for the upgrade's log lines. */
  runs: number | null
}

async function inspect(store: StoreName, dir: string): Promise<Found> {
  if (store === 'engine') {
    const e = await inspectEngine(dir)
    return e.fresh
      ? { store, dir, format: null, recorded: false, runs: null }
      : { store, dir, format: e.format, recorded: true, runs: e.runs }
  }
  const recorded = await readFormatFile(dir, store)
  // Newer: refused before LevelDB touches the folder.
  if (recorded !== null && recorded > FORMATS[store].current)
    throw newerFormat(store, join(dir, FORMAT_FILE), recorded)
  const opened = await probeLevel(store, dir, async () => true)
  // No FORMAT: a store made before versions were recorded, of today's layout, format 1.
  return { store, dir, format: recorded ?? (opened ? 1 : null), recorded: recorded !== null, runs: null }
}

/**
 * Records the current version in a store's folder before its part creates the store there (a
 * store is born with its version); a folder that already holds a database is left as it is.
 */
export async function prepareNewStore(dataDir: string, store: StoreName): Promise<void> {
  const dir = join(dataDir, store)
  await mkdir(dir, { recursive: true })
  if (FORMATS[store].recordedIn !== 'FORMAT' || (await holdsDatabase(dir))) return
  if ((await readFormatFile(dir, store)) === null) await writeFormatFile(dir, store, FORMATS[store].current)
}

async function reserveOn(dataDir: string, setting: ReserveSetting): Promise<number> {
  const fs = await statfs(dataDir)
  return reserveBytes(setting, fs.blocks * fs.bsize)
}

async function upgrade(f: Found & { format: number }, o: CheckOptions): Promise<void> {
  const { store, dir } = f
  const target = FORMATS[store].current
  let format = f.format
  const steps = UPGRADES[store] ?? {}
  if (!steps[format])
    throw new StoreRefused(
      store,
      `${dir}: the ${store} store is of format ${format}, which this svc cannot upgrade (it reads ${target}); start the svc that wrote it, or restore a backup`,
    )
  const growth = Object.entries(steps)
    .filter(([from]) => Number(from) >= format)
    .reduce((s, [, u]) => s + u.growth, 0)
  const backup = await backupBeside({
    store,
    dir,
    from: format,
    reserve: await reserveOn(o.dataDir, o.reserve),
    upgradeGrowth: growth,
    log: o.log,
    ...(o.now ? { now: o.now } : {}),
  })
  while (format < target) {
    const step = steps[format]
    if (!step)
      throw new StoreRefused(
        store,
        `${dir}: no upgrade of the ${store} store from format ${format}; restore ${backup}`,
      )
    const started = Date.now()
    o.log.info(
      {
        store,
        from: format,
        to: format + 1,
        ...(f.runs !== null && format === f.format ? { runs: f.runs } : {}),
      },
      `${store} store: upgrading from format ${format} to ${format + 1}${f.runs !== null && format === f.format ? ` (${f.runs} runs)` : ''}`,
    )
    const left = await step.run(dir, (done, of) =>
      o.log.info({ store, done, of }, `${store} store: upgrading, ${done} of ${of}`),
    )
    format++
    if (FORMATS[store].recordedIn === 'FORMAT') await writeFormatFile(dir, store, format)
    o.log.info(
      { store, format, ms: Date.now() - started },
      `${store} store: now format ${format} (${Date.now() - started} ms): ${left}`,
    )
  }
  // The store's own code recorded the engine's version: read back, so a step that did not is caught here.
  const after = await inspect(store, dir)
  if (after.format !== target)
    throw new StoreRefused(
      store,
      `${dir}: the ${store} store upgrade left format ${after.format}; restore ${backup} and report this`,
    )
  o.log.info(
    { store, format: target, backup },
    `${store} store upgraded to format ${target}; the copy from before is ${backup}`,
  )
}

/**
 * Checks the stores under `dataDir` before the hub opens them. Every store is looked at before
 * anything is written, so a refusal changes nothing; then older stores are upgraded and versions
 * recorded. Throws StoreRefused with the one line to show.
 */
export async function checkStores(o: CheckOptions): Promise<void> {
  const found: Found[] = []
  for (const store of o.stores) found.push(await inspect(store, join(o.dataDir, store)))
  for (const store of o.ifPresent ?? []) {
    const dir = join(o.dataDir, store)
    if (await stat(dir).catch(() => null)) found.push(await inspect(store, dir))
  }
  for (const f of found) {
    if (f.format === null) {
      if (o.stores.includes(f.store)) await prepareNewStore(o.dataDir, f.store)
      continue
    }
    if (f.format < FORMATS[f.store].current) await upgrade({ ...f, format: f.format }, o)
    else if (!f.recorded && FORMATS[f.store].recordedIn === 'FORMAT') {
      await writeFormatFile(f.dir, f.store, f.format)
      o.log.info(
        { store: f.store, format: f.format },
        `${f.store} store: format ${f.format} recorded in ${join(f.dir, FORMAT_FILE)}`,
      )
    }
  }
}

/**
 * For a command that reads a store while no hub runs (`svc sop runs`, `svc hub backup`): refuses
 * a store it should not open as it is, and writes nothing. A newer one gets the start's line; an
 * older one would be upgraded by opening it, without the copy the hub takes first.
 */
export async function checkReadable(dataDir: string, store: StoreName): Promise<void> {
  const dir = join(dataDir, store)
  if (!(await stat(dir).catch(() => null))) return
  const f = await inspect(store, dir)
  if (f.format !== null && f.format < FORMATS[store].current)
    throw new StoreRefused(
      store,
      `${dir}: the ${store} store is format ${f.format}, from an older svc; start the hub once (svc hub) to upgrade it, which copies it beside itself first`,
    )
}
