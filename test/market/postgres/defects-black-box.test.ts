// test/market/defects-black-box.test.ts again, with the market's store on PostgreSQL (store-engine.ts).
import { onPostgres } from '../store-engine.ts'

await onPostgres('defects-black-box', () => import('../defects-black-box.test.ts'))
