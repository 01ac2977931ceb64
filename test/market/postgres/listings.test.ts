// test/market/listings.test.ts again, with the market's store on PostgreSQL (store-engine.ts).
import { onPostgres } from '../store-engine.ts'

await onPostgres('listings', () => import('../listings.test.ts'))
