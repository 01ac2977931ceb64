// Anvil left to its defaults writes every old block's whole state under ~/.foundry/anvil/tmp and
// never removes it, even on SIGTERM: 80 GB had piled up on a development machine and a CI run
// died of a full disk. The chain we start must keep nothing on disk, however many blocks it mines.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { startAnvil } from '../../chain/anvil.ts'
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

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  const body = (await res.json()) as { result?: unknown; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result
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
  await rpc(anvil.rpcUrl, 'anvil_mine', ['0x3e8'])
  t.equal(await rpc(anvil.rpcUrl, 'eth_blockNumber', []), '0x3e8', 'the blocks were mined')
  t.equal(await filesUnder(join(home, '.foundry')), 0, 'while running')
  await anvil.stop()
  t.equal(await filesUnder(join(home, '.foundry')), 0, 'after stop')
})
