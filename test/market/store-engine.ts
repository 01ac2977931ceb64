// Which store engine the market tests run on. The test files run on LevelDB as they are; the
// files under test/market/postgres/ run the same tests again on PostgreSQL by setting
// SVC_TEST_MARKET_STORE=postgres before importing them: one throwaway cluster per test file
// (test/helpers/postgres.ts), a fresh database per market. Where PostgreSQL is missing those
// files report themselves skipped with the reason.
import { type PgCluster, postgresMissing, startPostgres } from '../helpers/postgres.ts'

// tap is loaded only when a cluster or a skip is needed: benchmarks use the market helpers too,
// and loading tap would make them a test run.
const tapRoot = async () => (await import('tap')).default

export type Engine = 'leveldb' | 'postgres'

export function testEngine(): Engine {
  return process.env.SVC_TEST_MARKET_STORE === 'postgres' ? 'postgres' : 'leveldb'
}

let cluster: Promise<PgCluster> | undefined

/** This file's cluster, started on first use and stopped when the file's tests end. */
export function testCluster(): Promise<PgCluster> {
  cluster ??= tapRoot().then((tap) => startPostgres(tap))
  return cluster
}

/** A store URL for one more market: a fresh database on PostgreSQL, null (LevelDB) otherwise. */
export async function testStoreUrl(engine: Engine = testEngine()): Promise<string | null> {
  if (engine === 'leveldb') return null
  return (await testCluster()).createDatabase()
}

/** Runs a test file's tests on PostgreSQL, or says why it cannot. */
export async function onPostgres(name: string, load: () => Promise<unknown>): Promise<void> {
  const why = postgresMissing()
  const tap = await tapRoot()
  if (why) {
    tap.test(`${name} on PostgreSQL`, { skip: why }, () => undefined)
    return
  }
  process.env.SVC_TEST_MARKET_STORE = 'postgres'
  tap.comment(`${name}: market store on PostgreSQL (a throwaway cluster for this file)`)
  await load()
}
