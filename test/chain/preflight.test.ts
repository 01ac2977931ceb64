// Preflight on a real dev chain with svc's own registries (no getVersion: the "unknown" revert is
// what vouches for the ValidationRegistry), the official error copy against the published ABIs,
// network presets, and `svc chain deploy-validation` putting svc's registry beside an identity
// registry that `svc chain check` then passes.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { writeChainFile } from '../../hub/files/chain-file.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { NETWORKS, resolveNetwork } from '../../chain/networks.ts'
import { officialErrorsAbi, revertText } from '../../chain/official-errors.ts'
import { runPreflight } from '../../chain/preflight-reads.ts'
import { main } from '../../cli/main.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { OFFICIAL_DIR } from './official-contracts.ts'

const chain = await startDevChain()
t.teardown(() => chain.stop())
const { rpcUrl, identityRegistry, validationRegistry, accounts } = chain
const base = {
  rpcUrl,
  identityRegistry,
  validationRegistry,
  agentId: 0n,
  attestorAddress: accounts.attestor.address,
}

t.test('the copied official errors are exactly those of the published ABIs', async (t) => {
  const names = new Set<string>()
  for (const f of ['abis-IdentityRegistry.json', 'abis-ValidationRegistry.json']) {
    const abi = JSON.parse(await readFile(join(OFFICIAL_DIR, f), 'utf8')) as { type: string; name: string }[]
    for (const e of abi) if (e.type === 'error') names.add(JSON.stringify(e))
  }
  const published = [...names].map(
    (s) => JSON.parse(s) as { name: string; inputs: { name: string; type: string }[] },
  )
  t.same(
    officialErrorsAbi.map((e) => `${e.name}(${e.inputs.map((i) => i.type).join(',')})`).sort(),
    published.map((e) => `${e.name}(${e.inputs.map((i) => i.type).join(',')})`).sort(),
  )
  // ERC721NonexistentToken(uint256 7): selector 0x7e273289.
  t.equal(revertText(`0x7e273289${(7).toString(16).padStart(64, '0')}`), 'ERC721NonexistentToken(7)')
  t.equal(revertText('0x'), 'reverted without a reason')
  t.equal(revertText('0xdeadbeef'), 'reverted with unknown error data 0xdeadbeef')
})

t.test("svc's own registries pass; the device must be owner or operator", async (t) => {
  const ok = await runPreflight({
    ...base,
    device: accounts.device.address,
    attestorKey: accounts.attestor.address,
  })
  t.same(ok.failures, [])
  t.ok(
    ok.passed.some((l) => /getValidationStatus answers/.test(l)),
    'vouched for by the unknown revert',
  )
  const stranger = await runPreflight({ ...base, device: accounts.buyer.address })
  t.same(stranger.failures, [
    `device ${accounts.buyer.address}: neither owner nor approved operator of agent 0 on identityRegistry ${identityRegistry} (owner ${accounts.owner.address}): the owner runs svc chain enrol (setApprovalForAll)`,
  ])
  const noAgent = await runPreflight({ ...base, agentId: 42n, device: accounts.device.address })
  t.match(noAgent.failures, [/^agent 42 on identityRegistry 0x[0-9a-fA-F]{40}: .*svc chain enrol/])
  const wrongKey = await runPreflight({ ...base, attestorKey: accounts.buyer.address })
  t.match(wrongKey.failures, [
    new RegExp(`^attestor key is for ${accounts.buyer.address}, but attestorAddress is`),
  ])
})

t.test('the hub names only the validation registry: its identity registry is read from it', async (t) => {
  const r = await runPreflight({
    rpcUrl,
    validationRegistry,
    agentId: 0n,
    device: accounts.device.address,
  })
  t.same(r.failures, [])
  t.ok(
    r.passed.some((l) =>
      l.toLowerCase().startsWith(`identityregistry ${identityRegistry.toLowerCase()}: erc-721`),
    ),
  )
  t.ok(r.passed.some((l) => l.startsWith(`device ${accounts.device.address}: owner or operator`)))
})

t.test('swapped registries and a low balance', async (t) => {
  const swapped = await runPreflight({
    ...base,
    identityRegistry: validationRegistry,
    validationRegistry: identityRegistry,
  })
  t.ok(
    swapped.failures.some((l) =>
      l.startsWith(`identityRegistry ${validationRegistry}: does not support ERC-721`),
    ),
  )
  t.ok(swapped.failures.some((l) => l.startsWith(`validationRegistry ${identityRegistry}: not an ERC-8004`)))
  const empty = '0x000000000000000000000000000000000000bEEF'
  const poor = await runPreflight({ ...base, attestorAddress: empty, attestorKey: empty })
  t.same(poor.failures, [])
  t.match(poor.warnings, [
    new RegExp(
      `^attestor ${empty}: balance 0 MON is below [\\d.]+ MON, Monad testnet's reserve of 10 MON plus [\\d.]+ MON for 100 transactions at 200000 gas and [\\d.]+ gwei: .*: fund it$`,
    ),
  ])
})

t.test('an RPC that does not answer: one failure, and nothing else claimed', async (t) => {
  const dead = `http://127.0.0.1:${await freePort()}`
  const r = await runPreflight({ ...base, rpcUrl: dead })
  t.equal(r.unreachable, true)
  t.same(r.passed, [])
  t.match(r.failures, [new RegExp(`^rpc ${dead}: no answer to eth_chainId`)])
})

t.test('network presets and custom networks', async (t) => {
  t.same(resolveNetwork({ network: 'monad-testnet' }), {
    ok: true,
    network: {
      name: 'monad-testnet',
      rpcUrl: NETWORKS['monad-testnet']!.rpcUrl,
      identityRegistry: '0x8004A818BFB912233c491871b3d84c89A494BD9e',
    },
  })
  t.match(resolveNetwork({ network: 'monad-testnet', 'rpc-url': 'http://127.0.0.1:8545' }), {
    ok: true,
    network: {
      rpcUrl: 'http://127.0.0.1:8545',
      identityRegistry: '0x8004A818BFB912233c491871b3d84c89A494BD9e',
    },
  })
  t.match(resolveNetwork({ network: 'mainnet' }), {
    ok: false,
    code: 'BAD_INPUT',
    error: /--network mainnet: unknown \(known: monad-testnet/,
  })
  t.match(resolveNetwork({}), { ok: false, code: 'BAD_INPUT', error: /give --network NAME or --rpc-url URL/ })
  t.match(resolveNetwork({ 'rpc-url': 'ftp://x' }), {
    ok: false,
    code: 'BAD_INPUT',
    error: /not an http\(s\) URL/,
  })
  t.match(resolveNetwork({ 'rpc-url': 'http://x', identity: '0x12' }), {
    ok: false,
    code: 'BAD_INPUT',
    error: /--identity 0x12: not an address/,
  })
})

t.test('svc chain deploy-validation, then svc chain check passes on the pair', async (t) => {
  const dir = await tempDir(t)
  const keyFile = join(dir, 'deployer.key')
  await writeFile(keyFile, accounts.buyer.privateKey, { mode: 0o600 })
  let out = ''
  let err = ''
  const io = {
    out: (s: string) => void (out += `${s}\n`),
    err: (s: string) => void (err += `${s}\n`),
    env: { SVC_HOME: join(dir, 'home') },
    cwd: dir,
  }
  const code = await main(
    [
      'chain',
      'deploy-validation',
      '--rpc-url',
      rpcUrl,
      '--identity',
      identityRegistry,
      '--key-file',
      keyFile,
      '--json',
    ],
    io,
  )
  t.equal(code, 0, err)
  const { validationRegistry: mine } = JSON.parse(out) as { validationRegistry: `0x${string}` }
  t.not(mine.toLowerCase(), validationRegistry.toLowerCase(), 'a new registry')
  const r = await runPreflight({ ...base, validationRegistry: mine, device: accounts.device.address })
  t.same(r.failures, [])
  const pub = publicClientFor(rpcUrl)
  const nonce = await pub.getTransactionCount({ address: accounts.buyer.address })
  out = ''
  err = ''
  const bad = await main(
    [
      'chain',
      'deploy-validation',
      '--rpc-url',
      rpcUrl,
      '--identity',
      accounts.payout.address,
      '--key-file',
      keyFile,
    ],
    io,
  )
  t.equal(bad, 1)
  t.match(
    err,
    new RegExp(
      `^svc chain: identityRegistry ${accounts.payout.address}: no contract code on chain 10143: check the address \\(nothing sent\\)\\n$`,
    ),
  )
  t.equal(await pub.getTransactionCount({ address: accounts.buyer.address }), nonce, 'nothing sent')
})

t.test(
  "Monad's 10 MON reserve: chain id 10143 is Monad testnet's, so svc chain check holds each sender to it",
  async (t) => {
    const pub = publicClientFor(rpcUrl)
    const deployer = walletClientFor(rpcUrl, accounts.deployer.privateKey)
    const fund = async (to: `0x${string}`, mon: string) =>
      pub.waitForTransactionReceipt({ hash: await deployer.sendTransaction({ to, value: parseEther(mon) }) })
    // A device with 9 MON: enough for 100 transactions' fees, not for the reserve on top.
    const device = privateKeyToAccount(generatePrivateKey())
    await fund(device.address, '9')
    const low = await runPreflight({ ...base, device: device.address })
    t.match(low.warnings, [
      new RegExp(
        `^device ${device.address}: balance 9 MON is below 10\\.[\\d]+ MON, Monad testnet's reserve of 10 MON plus [\\d.]+ MON for 100 transactions at 200000 gas and [\\d.]+ gwei: on Monad a transaction that would take an EIP-7702-delegated account \\(batched sync delegates the device and the attestor\\) below 10 MON reverts \\(Monad's docs, "EIP-7702 on Monad"; chain/README.md Batching\\): fund it$`,
      ),
    ])
    const rich = await runPreflight({ ...base, device: accounts.device.address })
    t.same(rich.warnings, [])
    t.ok(
      rich.passed.some((l) =>
        l.startsWith(
          `device ${accounts.device.address}: balance 10000 covers 100 transactions above Monad testnet's 10 MON reserve`,
        ),
      ),
    )

    // The attestor, named only by its address in the chain file (no key here), with 5 MON.
    const attestor = privateKeyToAccount(generatePrivateKey())
    await fund(attestor.address, '5')
    const dir = await tempDir(t)
    const home = join(dir, 'home')
    const { accounts: _dev, ...info } = chain.info
    await writeChainFile(join(home, 'chain.json'), { ...info, attestorAddress: attestor.address })
    await writeFile(join(home, 'device.key'), `${accounts.device.privateKey}\n`, { mode: 0o600 })
    let out = ''
    const code = await main(['chain', 'check'], {
      out: (s) => void (out += `${s}\n`),
      err: (s) => void (out += `${s}\n`),
      env: { SVC_HOME: home },
      cwd: dir,
    })
    t.equal(code, 0, 'a low balance warns; it does not fail the check')
    t.match(
      out,
      new RegExp(
        `\\nwarn  attestor ${attestor.address}: balance 5 MON is below 10\\.[\\d]+ MON, Monad testnet's reserve of 10 MON`,
      ),
    )
    t.match(
      out,
      new RegExp(`\\nok    device ${accounts.device.address}: balance 10000 covers 100 transactions above`),
    )
    t.notMatch(out, /warn {2}device/)
  },
)
