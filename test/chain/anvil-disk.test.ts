// Anvil left to its defaults writes every old block's whole state under ~/.foundry/anvil/tmp and
// never removes it, even on SIGTERM: 80 GB had piled up on a development machine and a CI run
// died of a full disk. The chain we start must keep nothing on disk, however many blocks it mines.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { createTestClient, http } from 'viem'
import { startAnvil } from '../../chain/anvil.ts'
import { publicClientFor, svcChain } from '../../chain/clients.ts'
import { tempDir } from '../helpers/tmp.ts'

async function filesUnder(dir: string): Promise<number> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true })
    return entries.filter((e) => e.isFile()).length
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0
    throw err
  }
}

t.test('1,000 mined blocks leave no state files under ~/.foundry', async (t) => {
  const home = await tempDir(t)
  // The spawned anvil inherits HOME, so its ~/.foundry is inside the temp folder.
  const realHome = process.env.HOME
  process.env.HOME = home
  t.teardown(() => {
    process.env.HOME = realHome
  })
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  await createTestClient({ chain: svcChain(anvil.rpcUrl), mode: 'anvil', transport: http(anvil.rpcUrl) }).mine({ blocks: 1000 })
  t.equal(await publicClientFor(anvil.rpcUrl).getBlockNumber(), 1000n, 'the blocks were mined')
  t.equal(await filesUnder(join(home, '.foundry')), 0, 'while running')
  await anvil.stop()
  t.equal(await filesUnder(join(home, '.foundry')), 0, 'after stop')
})
