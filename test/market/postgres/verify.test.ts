// test/market/verify.test.ts again, with the market's store on PostgreSQL (store-engine.ts).
import { onPostgres } from '../store-engine.ts'

await onPostgres('verify', () => import('../verify.test.ts'))
