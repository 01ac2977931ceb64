// test/market/market-attestor.test.ts again, with the market's store on PostgreSQL (store-engine.ts).
import { onPostgres } from '../store-engine.ts'

await onPostgres('market-attestor', () => import('../market-attestor.test.ts'))
