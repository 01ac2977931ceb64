// Batched sync: many requests and answers per transaction, msg.sender still the device and the
// validator; a line whose request hash someone else took first fails with the reason while the
// rest of its batch is attested.
import { join } from 'node:path'
import t from 'tap'
import { parseAbiItem, parseGwei } from 'viem'
import { validationRegistryAbi } from '../../chain/abi.generated.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { attestLines } from '../helpers/attest-lines.ts'
import { startDevAttestor } from '../helpers/dev-attestor.ts'
import { tempDir } from '../helpers/tmp.ts'

const { chain, attestor } = await startDevAttestor(t)
const pub = publicClientFor(chain.rpcUrl)
const rpc = (method: string, params: unknown[] = []) =>
  pub.request({ method: method as never, params: params as never }) as Promise<unknown>

t.test(
  'a request hash taken by someone else fails that line; the rest of the batch is attested',
  async (t) => {
    const dir = await tempDir(t)
    const store = await openAttestStore(join(dir, 'db'))
    t.teardown(() => store.close())
    const signer = signerFromKey(chain.accounts.device.privateKey)
    await attestLines(store, signer, 12, 't')
    // The agent's owner requests line 5's hash first, naming another validator.
    const taken = (await store.get(4))!
    const owner = walletClientFor(chain.rpcUrl, chain.accounts.owner.privateKey)
    const other = chain.accounts.deployer.address
    await pub.waitForTransactionReceipt({
      hash: await owner.writeContract({
        address: chain.validationRegistry,
        abi: validationRegistryAbi,
        functionName: 'validationRequest',
        args: [other, BigInt(chain.agentId), 'svc://elsewhere', taken.requestHash],
      }),
    })
    // Sync must not read the row first (a fresh line has no reason to): the batch estimate finds it.
    const warnings: string[] = []
    const infos: string[] = []
    const sync = createAttestSync({
      store,
      chain: chain.info,
      attestorUrl: attestor.url,
      signer,
      progressEveryMs: 0, // the hub's default is 10 s; here every step logs
      log: { warn: (m) => warnings.push(String(m)), info: (m) => infos.push(String(m)) },
    })
    const before = await pub.getTransactionCount({ address: signer.address })
    t.same(await sync.runOnce(), { requested: 11, attested: 11, failed: 1, remaining: 0 })
    const bad = (await store.get(4))!
    t.equal(bad.state, 'failed')
    t.match(
      bad.error,
      new RegExp(`request hash ${taken.requestHash} is held by another request \\(validator ${other}`),
    )
    t.match(bad.error, /validationRequest reverted: exists/)
    t.ok(
      warnings.some((w) => w.startsWith('line 5: ')),
      'the warning names the line',
    )
    // One request transaction for the eleven (plus the delegation's nonce).
    t.equal((await pub.getTransactionCount({ address: signer.address })) - before, 2)
    const row = await readValidationStatus(pub, chain.validationRegistry, taken.requestHash)
    t.equal(row.ok && row.value.validator, other, "the other request's row is untouched")
    for (const seq of [0, 3, 5, 11]) {
      const r = await readValidationStatus(pub, chain.validationRegistry, (await store.get(seq))!.requestHash)
      t.equal(
        r.ok && r.value.validator,
        chain.accounts.attestor.address,
        `line ${seq + 1} answered by the attestor`,
      )
    }
    const st = sync.status()
    t.equal(st.state, 'idle')
    t.match(
      infos.find((l) => l.startsWith('sync progress: ')),
      /^sync progress: syncing: \d+\/12 lines, [\d.]+ lines\/s, ETA /,
      'the hub logs progress while catching up',
    )
  },
)

t.test(
  'a batch mined as reverted (a hash taken after the estimate, in the same block): the line at fault fails with the revert reason, the rest are attested once, in order',
  async (t) => {
    const dir = await tempDir(t)
    const store = await openAttestStore(join(dir, 'db'))
    t.teardown(() => store.close())
    const signer = signerFromKey(chain.accounts.device.privateKey)
    await attestLines(store, signer, 12, 'race')
    const taken = (await store.get(4))!
    const warnings: string[] = []
    const sync = createAttestSync({
      store,
      chain: chain.info,
      attestorUrl: attestor.url,
      signer,
      log: { warn: (m) => warnings.push(String(m)) },
    })
    const fromBlock = await pub.getBlockNumber()
    // Mining held: the batch is estimated (it passes: nobody holds line 5's hash yet) and sent.
    await rpc('evm_setAutomine', [false])
    t.teardown(() => rpc('evm_setAutomine', [true]))
    const running = sync.runOnce()
    while (BigInt(((await rpc('txpool_status')) as { pending: string }).pending) === 0n)
      await new Promise((r) => setTimeout(r, 20))
    // Then the owner requests line 5's hash with a higher tip: it goes first in the same block.
    const owner = walletClientFor(chain.rpcUrl, chain.accounts.owner.privateKey)
    const other = chain.accounts.deployer.address
    const front = await owner.writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationRequest',
      args: [other, BigInt(chain.agentId), 'svc://first', taken.requestHash],
      gas: 300_000n,
      maxFeePerGas: parseGwei('500'),
      maxPriorityFeePerGas: parseGwei('100'),
    })
    await rpc('evm_mine')
    await rpc('evm_setAutomine', [true])
    const block = await pub.getBlock({ blockTag: 'latest' })
    t.equal(block.transactions[0], front, "the owner's request was mined first")
    const batch = await pub.getTransactionReceipt({ hash: block.transactions[1]! })
    t.equal(batch.status, 'reverted', 'the batch was mined and reverted')

    t.same(await running, { requested: 11, attested: 11, failed: 1, remaining: 0 })
    const bad = (await store.get(4))!
    t.equal(bad.state, 'failed')
    t.equal(
      bad.error,
      `request hash ${taken.requestHash} is held by another request (validator ${other}, agent ${chain.agentId}) (validationRequest reverted in batch ${batch.transactionHash}: exists)`,
      'the line names the holder and the revert reason of the mined batch',
    )
    t.ok(
      warnings.some((w) => w.includes(`reverted at line 5;`)),
      'the warning names the line the batch reverted at',
    )
    t.same(store.counts(), { total: 12, pending: 0, sending: 0, requested: 0, attested: 11, failed: 1 })
    t.same(await store.sends(), [], 'no send left unsettled')

    const ours = new Set<string>()
    for await (const r of store.range()) ours.add(r.requestHash)
    const logs = (
      await pub.getLogs({
        address: chain.validationRegistry,
        event: parseAbiItem(
          'event ValidationRequest(address indexed validatorAddress, uint256 indexed agentId, string requestURI, bytes32 indexed requestHash)',
        ),
        fromBlock,
      })
    ).filter((l) => ours.has(l.args.requestHash!))
    const expected: string[] = []
    for (let seq = 0; seq < 12; seq++) if (seq !== 4) expected.push((await store.get(seq))!.requestHash)
    t.same(
      logs
        .filter((l) => l.args.validatorAddress === chain.accounts.attestor.address)
        .map((l) => l.args.requestHash),
      expected,
      'the other eleven requested exactly once each, in seq order',
    )
    t.same(
      logs.filter((l) => l.args.requestHash === taken.requestHash).map((l) => l.args.validatorAddress),
      [other],
      "line 5's hash holds only the owner's request",
    )
    const answers = (
      await pub.getLogs({
        address: chain.validationRegistry,
        event: parseAbiItem(
          'event ValidationResponse(address indexed validatorAddress, uint256 indexed agentId, bytes32 indexed requestHash, uint8 response, string responseURI, bytes32 responseHash, string tag)',
        ),
        fromBlock,
      })
    )
      .filter((l) => ours.has(l.args.requestHash!))
      .map((l) => l.args.requestHash)
    t.same(answers.toSorted(), expected.toSorted(), 'each of the eleven answered exactly once')
  },
)
