// What a backup reads of the engine store (`exportRecords`): apart from the other reads because
// it stops retention while it runs and reads the whole store, not a run or a page.
import { idOfPosition } from './finished-index.ts'
import { splitRecs } from './log/index-file.ts'
import { INDEX } from './run-index.ts'
import type { StoreContext } from './store-context.ts'
import { FIN, OPEN, RUN, deltaKey } from './store-layout.ts'
import { indexOnly, loggedAdmissions } from './store-reads.ts'

/**
 * What a backup keeps (hub/backup/README.md, "What an archive holds"), as the store kept it
 * before the history log (a key and its JSON value): a restore loads them into a fresh
 * LevelDB, and the open after it moves them into a log of its own (`migrate`). One LevelDB
 * snapshot, once everything logged is applied to it; no retention pass runs while it is read,
 * so every segment a locator points into stays. Left out: what the log or a migration makes
 * again (the index, `meta!`), and the finished runs LevelDB holds nothing of come after the
 * rest, from the run index (store-writes.ts `indexOwn`), then the admission records, which only
 * the log holds (store-layout.ts `logOnly`). `history: false` also leaves out finished runs and
 * admission records: what stays is what the hub would go on with.
 */
export async function* exportRecords(
  ctx: StoreContext,
  opts: { history: boolean },
): AsyncGenerator<[string, string]> {
  ctx.exporting++
  try {
    if (ctx.pruning) await ctx.pruning
    await ctx.settle()
    // In key order `open!` comes before `run!`: the unfinished runs are known by then.
    const open = new Set<string>()
    // Values read from the log a few hundred at a time, not one after another.
    let chunk: [string, string][] = []
    const read = async () => {
      const texts = await Promise.all(chunk.map(([, v]) => ctx.valueOf(v)))
      const out = chunk.flatMap(([key], i) =>
        texts[i] === undefined ? [] : [[key, texts[i]!] as [string, string]],
      )
      chunk = []
      return out
    }
    for await (const [key, v] of ctx.db.iterator()) {
      if (key.startsWith('meta!') || key.startsWith(INDEX)) continue
      if (!opts.history) {
        if (key.startsWith(FIN)) continue
        if (key.startsWith(OPEN)) open.add(key.slice(OPEN.length))
        if (key.startsWith(RUN) && !open.has(key.slice(RUN.length, key.lastIndexOf('!')))) continue
      }
      chunk.push([key, v])
      // A value in a segment retention dropped before (an old MQTT mark) is gone.
      if (chunk.length >= 256) yield* await read()
    }
    yield* await read()
    if (!opts.history) return
    for await (const e of indexOnly(ctx)) {
      const id = idOfPosition(e.pos)
      const { deltas, summary } = splitRecs(e.recs!)
      deltas.forEach((at, i) => chunk.push([deltaKey(id, i), at]))
      chunk.push([FIN + id, summary])
      if (chunk.length >= 256) yield* await read()
    }
    yield* await read()
    // A record the log holds twice (store-reads.ts `loggedAdmissions`) is loaded once: one key.
    yield* loggedAdmissions(ctx, 'oldest first')
  } finally {
    ctx.exporting--
  }
}
