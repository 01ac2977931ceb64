// test/market/last-verification.test.ts again, with the market's store on PostgreSQL (store-engine.ts).
import { onPostgres } from '../store-engine.ts'

await onPostgres('last-verification', () => import('../last-verification.test.ts'))
