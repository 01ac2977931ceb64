// Anvil left to its defaults writes every old block's whole state under ~/.foundry/anvil/tmp and
// never removes it, even on SIGTERM: 80 GB had piled up on a development machine and a CI run
// died of a full disk. The chain we start must keep nothing on disk, however many blocks it mines.
// And `--prune-history` with no count keeps only the newest state: a read at `latest` that
// anvil resolves to a block number just before the next block is mined then fails with
// BlockOutOfRangeError (-32602). That failed a CI run through the attestor; a few recent states
// are kept in memory.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { createTestClient, http } from 'viem'
import { startAnvil } from '../../chain/anvil.ts'
import { ANVIL_KEYS } from '../../chain/accounts.ts'
import { publicClientFor, svcChain, walletClientFor } from '../../chain/clients.ts'
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
  await createTestClient({
    chain: svcChain(anvil.rpcUrl),
    mode: 'anvil',
    transport: http(anvil.rpcUrl),
  }).mine({ blocks: 1000 })
  t.equal(await publicClientFor(anvil.rpcUrl).getBlockNumber(), 1000n, 'the blocks were mined')
  t.equal(await filesUnder(join(home, '.foundry')), 0, 'while running')
  await anvil.stop()
  t.equal(await filesUnder(join(home, '.foundry')), 0, 'after stop')
})

t.test('reads at latest never fail while blocks are being mined', async (t) => {
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  const pub = publicClientFor(anvil.rpcUrl)
  const target = '0x00000000000000000000000000000000000000aa' as const
  let sending = 4
  const send = async (key: (typeof ANVIL_KEYS)[number]): Promise<void> => {
    const wallet = walletClientFor(anvil.rpcUrl, key)
    for (let i = 0; i < 150; i++) await wallet.sendTransaction({ to: target, value: 1n })
    sending--
  }
  const failures: string[] = []
  let reads = 0
  const read = async (): Promise<void> => {
    while (sending > 0) {
      for (const r of [pub.getBalance({ address: target }), pub.call({ to: target, data: '0x' })]) {
        reads++
        // The RPC's own words (viem's `details`) say which of anvil's errors it was.
        await r.catch((err: Error & { shortMessage?: string; details?: string }) =>
          failures.push(`${err.shortMessage ?? err.message} (${err.details ?? 'no details'})`),
        )
      }
    }
  }
  await Promise.all([...ANVIL_KEYS.slice(0, 4).map(send), read(), read(), read(), read()])
  t.equal(await pub.getBalance({ address: target }), 600n, 'all 600 transfers mined')
  t.ok(reads >= 100, `${reads} reads overlapped the mining`)
  t.same(failures.slice(0, 3), [], `no read failed (${failures.length} of ${reads})`)
})
