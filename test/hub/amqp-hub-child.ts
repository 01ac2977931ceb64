// The child hub of amqp-crash.test.ts: the hub's amqp path (amqp-world.ts startAmqpParts) on the
// folder it is given. Once a delivery's admission is stored it writes `recorded` (the decisions)
// and never acknowledges: the parent kills it there, between the stored admission and the ack.
import { renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { silentLog } from '../../hub/log.ts'
import { waitFor } from '../helpers/wait.ts'
import { startAmqpParts } from './amqp-world.ts'

const [dir, url, queue] = process.argv.slice(2) as [string, string, string]
const parts = await startAmqpParts(dir, url, queue, silentLog, async ({ routingKey, results }) => {
  // Written aside and renamed: the parent reads `recorded` as soon as it exists, never half written.
  writeFileSync(join(dir, 'recorded.tmp'), JSON.stringify({ routingKey, results }))
  renameSync(join(dir, 'recorded.tmp'), join(dir, 'recorded'))
  await new Promise(() => {}) // held here until killed
})
await waitFor(() => parts.router.amqpConsuming(), 'the child to consume', { timeoutMs: 60_000 })
writeFileSync(join(dir, 'consuming'), '')
setInterval(() => {}, 1 << 30)
