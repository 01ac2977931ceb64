// Listing reads on PostgreSQL: one indexed query per page. Keyset pagination walks the sort
// order's index from the cursor (`(value, slug)` past the last row shown), search is the GIN index
// over the title and summary words, and unfiltered or type/licence-filtered totals are counter
// rows kept by the listings trigger (migrations/001_store.sql). Nothing here reads every listing.
import type pg from 'pg'
import { facetOf } from './browse-order.ts'
import type { ListingRecord } from './records.ts'
import type { AgentStats, BrowsePage, BrowseQuery, Cursor, Sort } from './store.ts'

const COLUMN: Record<Sort, { col: string; desc: boolean; cast: string }> = {
  newest: { col: 'created_at', desc: true, cast: 'bigint' },
  price: { col: 'price_wei', desc: false, cast: 'numeric' },
  rows: { col: 'row_count', desc: true, cast: 'bigint' },
}

type Row = { doc: ListingRecord }

const cursorFor =
  (sort: Sort) =>
  (l: ListingRecord): Cursor => ({
    sort,
    value: sort === 'newest' ? l.createdAt : sort === 'price' ? l.priceWei : l.rows,
    slug: l.slug,
  })

/** `where` terms for a keyset position: rows strictly after (or before) the cursor's row. */
function keyset(sort: Sort, c: Cursor, before: boolean, p: unknown[]): string {
  const { col, desc, cast } = COLUMN[sort]
  p.push(String(c.value), c.slug)
  const v = `$${p.length - 1}::${cast}`
  const s = `$${p.length}`
  // In the page's direction, a larger value comes later when ascending, earlier when descending;
  // the slug always ascends. Mixed directions cannot be one row comparison, so the value bound is
  // spelled out (it is what lets the index start at the cursor).
  const later = desc !== before
  if (!desc && !before) return `(${col}, k) > (${v}, ${s})`
  if (!desc && before) return `(${col}, k) < (${v}, ${s})`
  return later
    ? `${col} <= ${v} and (${col} < ${v} or k > ${s})`
    : `${col} >= ${v} and (${col} > ${v} or k < ${s})`
}

function filters(q: BrowseQuery, p: unknown[]): string[] {
  const w: string[] = []
  if (q.machineType) {
    p.push(q.machineType)
    w.push(`machine_type = $${p.length}`)
  }
  if (q.license) {
    p.push(q.license)
    w.push(`license = $${p.length}`)
  }
  if (q.minWei !== undefined) {
    p.push(q.minWei.toString())
    w.push(`price_wei >= $${p.length}::numeric`)
  }
  if (q.maxWei !== undefined) {
    p.push(q.maxWei.toString())
    w.push(`price_wei <= $${p.length}::numeric`)
  }
  if (q.words.length > 0) {
    // Each word quoted as a lexeme, all of them required: no tsquery syntax from the visitor.
    p.push(q.words.map((x) => `'${x.replace(/'/g, "''")}'`).join(' & '))
    w.push(`search @@ to_tsquery('simple', $${p.length})`)
  }
  return w
}

export async function browsePg(pool: pg.Pool, q: BrowseQuery): Promise<BrowsePage> {
  const p: unknown[] = []
  const where = filters(q, p)
  const countWhere = [...where]
  const countParams = [...p]
  const cur = q.after ?? q.before
  if (cur) where.push(keyset(q.sort, cur, q.before !== undefined, p))
  const { col, desc } = COLUMN[q.sort]
  const forward = q.before === undefined
  const dir = desc === forward ? 'desc' : 'asc'
  const slugDir = forward ? 'asc' : 'desc'
  p.push(q.limit + 1)
  let sql = `select doc from listings ${where.length ? `where ${where.join(' and ')}` : ''} order by ${col} ${dir}, k ${slugDir} limit $${p.length}`
  if (!cur && q.offset) {
    p.push(q.offset)
    sql += ` offset $${p.length}`
  }
  const plain = q.words.length === 0 && q.minWei === undefined && q.maxWei === undefined
  const [rows, total] = await Promise.all([
    pool.query<Row>(sql, p),
    plain
      ? pool.query<{ n: string }>('select n from listing_counts where k = $1', [
          facetOf(q.machineType, q.license),
        ])
      : pool.query<{ n: string }>(
          `select count(*) as n from listings ${countWhere.length ? `where ${countWhere.join(' and ')}` : ''}`,
          countParams,
        ),
  ])
  const listings = rows.rows.map((r) => r.doc)
  const more = listings.length > q.limit
  if (more) listings.pop()
  if (!forward) listings.reverse()
  const n = Number(total.rows[0]?.n ?? 0)
  const c = cursorFor(q.sort)
  const first = listings[0]
  const last = listings[listings.length - 1]
  if (!forward)
    return { total: n, listings, prev: more && first ? c(first) : null, next: last ? c(last) : null }
  return {
    total: n,
    listings,
    next: more && last ? c(last) : null,
    prev: (q.after || (q.offset ?? 0) > 0) && first ? c(first) : null,
  }
}

export async function agentListingsPg(
  pool: pg.Pool,
  agentId: string,
  limit: number,
  after?: Cursor,
): Promise<{ listings: ListingRecord[]; next: Cursor | null }> {
  const p: unknown[] = [agentId]
  const where = ['agent_id = $1', 'not sample']
  if (after) where.push(keyset('newest', after, false, p))
  p.push(limit + 1)
  const r = await pool.query<Row>(
    `select doc from listings where ${where.join(' and ')} order by created_at desc, k asc limit $${p.length}`,
    p,
  )
  const listings = r.rows.map((x) => x.doc)
  const more = listings.length > limit
  if (more) listings.pop()
  const last = listings[listings.length - 1]
  return { listings, next: more && last ? cursorFor('newest')(last) : null }
}

export async function agentStatsPg(pool: pg.Pool, agentId: string, since: number): Promise<AgentStats> {
  const [c, recent, span] = await Promise.all([
    pool.query<{ n: string; row_sum: string }>('select n, row_sum from listing_counts where k = $1', [
      `a=${agentId}`,
    ]),
    pool.query<{ created_at: string; row_count: string }>(
      'select created_at, row_count from listings where agent_id = $1 and not sample and created_at >= $2 order by created_at desc',
      [agentId, since],
    ),
    pool.query<{ first: string | null; last: string | null }>(
      'select min(created_at) as first, max(created_at) as last from listings where agent_id = $1 and not sample',
      [agentId],
    ),
  ])
  return {
    listings: Number(c.rows[0]?.n ?? 0),
    rows: Number(c.rows[0]?.row_sum ?? 0),
    recent: recent.rows.map((r) => ({ createdAt: Number(r.created_at), rows: Number(r.row_count) })),
    firstAt: span.rows[0]?.first != null ? Number(span.rows[0].first) : null,
    lastAt: span.rows[0]?.last != null ? Number(span.rows[0].last) : null,
  }
}
