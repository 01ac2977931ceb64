// Schema migrations for the PostgreSQL engine: the .sql files in ./migrations, applied in name
// order at start, each in its own transaction and recorded in `schema_migrations`. Two instances
// starting at once take turns on an advisory lock, so each file runs exactly once.
import { readFile, readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'
import { errorText } from '../../errors/text.ts'

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url))
/** Any fixed number: the advisory lock the market's instances agree on while migrating. */
const LOCK = 7_017_017

/** Applies the pending migrations; returns the names it applied. */
export async function migrate(pool: pg.Pool, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[a-z0-9_]+\.sql$/.test(f)).sort()
  const c = await pool.connect()
  const applied: string[] = []
  try {
    await c.query('select pg_advisory_lock($1)', [LOCK])
    await c.query(
      'create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())',
    )
    const done = new Set(
      (await c.query<{ name: string }>('select name from schema_migrations')).rows.map((r) => r.name),
    )
    for (const f of files) {
      if (done.has(f)) continue
      const sql = await readFile(`${dir}${f}`, 'utf8')
      await c.query('begin')
      try {
        await c.query(sql)
        await c.query('insert into schema_migrations (name) values ($1)', [f])
        await c.query('commit')
      } catch (err) {
        await c.query('rollback')
        throw new Error(`migration ${f}: ${errorText(err)}`)
      }
      applied.push(f)
    }
  } finally {
    await c.query('select pg_advisory_unlock($1)', [LOCK]).catch(() => undefined)
    c.release()
  }
  return applied
}
