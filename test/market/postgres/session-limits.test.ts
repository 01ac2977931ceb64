// test/market/session-limits.test.ts again, with the market's store on PostgreSQL (store-engine.ts).
import { onPostgres } from '../store-engine.ts'

await onPostgres('session-limits', () => import('../session-limits.test.ts'))
