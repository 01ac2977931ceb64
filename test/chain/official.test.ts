// svc against the official ERC-8004 reference registries (erc-8004/erc-8004-contracts v2.0.0,
// test/fixtures/erc8004-official/, compiled by solc-js with OpenZeppelin 5.4.0, behind ERC1967
// proxies as their tests deploy them) on a real anvil: `svc chain enrol` with a keystore →
// chain_attest into a store → sync → market verify → purchase; a placeholder proxy (no
// implementation yet) that preflight refuses with nothing marked attested; and bad input to
// enrol, each refused in one line with nothing changed on chain or on disk.
import { spawn } from 'node:child_process'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { type Address, type Hex, parseAbi, parseEther } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { anvilAccount, devAccounts } from '../../chain/accounts.ts'
import { startAnvil } from '../../chain/anvil.ts'
import { type ChainInfo, chainFilePath, readChainFile } from '../../chain/chain-file.ts'
import { writeChainFile } from '../../hub/files/chain-file.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { deployBatchExecutor } from '../../chain/deploy.ts'
import type { DevChain } from '../../chain/dev.ts'
import { encryptKeystore } from '../../chain/keystore.ts'
import { loadOrCreateDeviceKey, signerFromKey } from '../../hub/attest/device-key.ts'
import { exportAttestations } from '../../hub/attest/export.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { main } from '../../cli/main.ts'
import { svcPaths } from '../../hub/paths.ts'
import { loadAttestorConfig } from '../../market/attestor/config.ts'
import { startAttestorServer } from '../../market/attestor/server.ts'
import { buildManifest } from '../../records/manifest.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { api, dataset, issueKey, postListing, signIn, startMarket } from '../market/market-helpers.ts'
import { deployOfficial, deployPlaceholderProxy } from './official-contracts.ts'

const acc = devAccounts()
const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const rpcUrl = anvil.rpcUrl
const pub = publicClientFor(rpcUrl)
const deployer = walletClientFor(rpcUrl, acc.deployer.privateKey)
const regs = await deployOfficial(deployer, pub)
// Batched sync on the official pair: the EIP-7702 executor (chain/README.md: Batching).
const batchExecutor = await deployBatchExecutor(deployer, pub)
const dir = await tempDir(t)
const home = join(dir, 'home')
const PASS = 'correct horse battery staple'
const keystore = join(dir, 'owner-keystore.json')
// A small scrypt cost keeps the test quick; the format is the same as geth's and ethers'.
await writeFile(keystore, await encryptKeystore(acc.owner.privateKey, PASS, 2 ** 12), { mode: 0o600 })

const device = await loadOrCreateDeviceKey(svcPaths({ SVC_HOME: home }).deviceKey)
const deviceKey = (await readFile(svcPaths({ SVC_HOME: home }).deviceKey, 'utf8')).trim() as Hex
await pub.waitForTransactionReceipt({
  hash: await deployer.sendTransaction({ to: device.address, value: parseEther('1') }),
})

const readAbi = parseAbi([
  'function ownerOf(uint256) view returns (address)',
  'function isApprovedForAll(address, address) view returns (bool)',
  'function getAgentWallet(uint256) view returns (address)',
  'function getVersion() view returns (string)',
])

interface Ran {
  code: number
  out: string
  err: string
}
async function svc(args: string[], env: Record<string, string> = {}, svcHome = home): Promise<Ran> {
  let out = ''
  let err = ''
  const code = await main(args, {
    out: (s) => void (out += s.endsWith('\n') ? s : `${s}\n`),
    err: (s) => void (err += s.endsWith('\n') ? s : `${s}\n`),
    env: { SVC_HOME: svcHome, ...env },
    cwd: dir,
  })
  return { code, out, err }
}
const net = [
  '--rpc-url',
  rpcUrl,
  '--identity',
  regs.identityRegistry,
  '--validation',
  regs.validationRegistry,
]
const withKeystore = ['--keystore', keystore, '--passphrase-env', 'OWNER_PASS']
const ownerNonce = () => pub.getTransactionCount({ address: acc.owner.address })

t.test(
  'enrol: register, approve and set the wallet on the official registries, then skip all three',
  async (t) => {
    const r = await svc(['chain', 'enrol', ...net, ...withKeystore, '--attestor', acc.attestor.address], {
      OWNER_PASS: PASS,
    })
    t.equal(r.code, 0, r.err)
    const file = await readChainFile(chainFilePath(home))
    t.ok(file.ok)
    if (!file.ok) return
    const info = file.value
    t.match(info, {
      rpcUrl,
      chainId: 10143,
      identityRegistry: regs.identityRegistry,
      validationRegistry: regs.validationRegistry,
      attestorAddress: acc.attestor.address,
    })
    t.equal(info.accounts, undefined, 'no keys in a real chain file')
    t.equal((await stat(chainFilePath(home))).mode & 0o777, 0o600)
    const agent = BigInt(info.agentId)
    const read = (functionName: 'ownerOf' | 'getAgentWallet', args: [bigint]) =>
      pub.readContract({ address: regs.identityRegistry, abi: readAbi, functionName, args })
    t.equal(await read('ownerOf', [agent]), acc.owner.address, 'the owner owns the new agent')
    t.equal(await read('getAgentWallet', [agent]), device.address, "the device is the agent's wallet")
    t.equal(
      await pub.readContract({
        address: regs.identityRegistry,
        abi: readAbi,
        functionName: 'isApprovedForAll',
        args: [acc.owner.address, device.address],
      }),
      true,
      'the device is an approved operator',
    )
    t.match(r.out, /done\s+register/)
    t.match(r.out, /done\s+approve/)
    t.match(r.out, /done\s+wallet/)

    const nonce = await ownerNonce()
    const again = await svc(['chain', 'enrol', ...net, ...withKeystore], { OWNER_PASS: PASS })
    t.equal(again.code, 0, again.err)
    t.match(again.out, /skip\s+register.*from the chain file/)
    t.match(again.out, /skip\s+approve/)
    t.match(again.out, /skip\s+wallet/)
    t.equal(await ownerNonce(), nonce, 'a second enrol sends nothing')
    const same = await readChainFile(chainFilePath(home))
    t.same(same.ok && same.value, info, 'and writes the same chain file')
  },
)

t.test('enrol --dry-run prints each transaction with its gas and sends nothing', async (t) => {
  const other = join(dir, 'home-dry')
  const nonce = await ownerNonce()
  const r = await svc(['chain', 'enrol', ...net, ...withKeystore, '--dry-run'], { OWNER_PASS: PASS }, other)
  t.equal(r.code, 0, r.err)
  t.match(
    r.out,
    /send\s+register\s+register\("svc:\/\/agents\/0x[0-9a-fA-F]{40}"\).*gas \d+, up to [\d.]+ MON/,
  )
  t.match(r.out, /send\s+approve\s+setApprovalForAll\(0x[0-9a-fA-F]{40}, true\).*gas \d+/)
  t.match(r.out, /send\s+wallet\s+setAgentWallet\(<new agent>/)
  t.match(r.out, /total\s+up to [\d.]+ MON/)
  t.equal(await ownerNonce(), nonce)
  await t.rejects(stat(chainFilePath(other)), 'no chain file written')
  await t.rejects(stat(svcPaths({ SVC_HOME: other }).deviceKey), 'no device key written')
})

t.test('--print-signature: the device signs AgentWalletSet for an owner with a browser wallet', async (t) => {
  const r = await svc([
    'chain',
    'enrol',
    ...net,
    '--print-signature',
    '--agent-id',
    '0',
    '--owner',
    acc.owner.address,
    '--json',
  ])
  t.equal(r.code, 0, r.err)
  const sig = JSON.parse(r.out) as { signature: Hex; deadline: string; newWallet: Address }
  t.equal(sig.newWallet, device.address)
  // The owner sends it (here with viem, as a browser wallet would): the registry accepts it.
  const owner = walletClientFor(rpcUrl, acc.owner.privateKey)
  const hash = await owner.writeContract({
    address: regs.identityRegistry,
    abi: parseAbi(['function setAgentWallet(uint256, address, uint256, bytes)']),
    functionName: 'setAgentWallet',
    args: [0n, sig.newWallet, BigInt(sig.deadline), sig.signature],
  })
  t.equal((await pub.waitForTransactionReceipt({ hash })).status, 'success')
  // Then the device writes its chain file with no owner key: the steps are checked on chain.
  const before = await readFile(chainFilePath(home), 'utf8')
  const done = await svc(['chain', 'enrol', ...net, '--agent-id', '0'])
  t.equal(done.code, 0, done.err)
  t.match(done.out, /agent 0: device already operator and wallet/)
  t.equal(await readFile(chainFilePath(home), 'utf8'), before, 'the same chain file')
  const stranger = join(dir, 'home-stranger')
  const refused = await svc(
    ['chain', 'enrol', ...net, '--agent-id', '0', '--attestor', acc.attestor.address],
    {},
    stranger,
  )
  t.equal(refused.code, 1)
  t.match(
    refused.err,
    /^svc chain: device 0x[0-9a-fA-F]{40}: neither owner nor approved operator of agent 0 .*\(nothing changed\)\n$/,
  )
  await t.rejects(stat(chainFilePath(stranger)), 'no chain file')
})

t.test('svc chain check passes on the official pair', async (t) => {
  const r = await svc(['chain', 'check', '--json'], { SVC_ATTESTOR_KEY: acc.attestor.privateKey })
  t.equal(r.code, 0, r.out)
  const rep = JSON.parse(r.out) as { ok: boolean; passed: string[]; failures: string[] }
  t.equal(rep.ok, true)
  t.ok(rep.passed.some((l) => /getVersion 2\.0\.0/.test(l)))
  t.ok(rep.passed.some((l) => /ERC-721/.test(l)))
  t.ok(rep.passed.some((l) => l.startsWith(`device ${device.address}: owner or operator`)))
  t.ok(rep.passed.some((l) => l === `attestor key: ${acc.attestor.address}`))
})

t.test('chain_attest → sync → market verify → purchase on the official registries', async (t) => {
  const file = await readChainFile(chainFilePath(home))
  if (!file.ok) throw new Error(file.error)
  const info: ChainInfo = { ...file.value, batchExecutor }
  const cfg = await loadAttestorConfig({ chain: info, env: { SVC_ATTESTOR_KEY: acc.attestor.privateKey } })
  if (!cfg.ok) throw new Error(cfg.error)
  const attestor = await startAttestorServer(cfg.config)
  t.teardown(() => attestor.close())
  const store = await openAttestStore(join(dir, 'attest'))
  t.teardown(() => store.close())
  const signer = signerFromKey(deviceKey)
  const tool = createChainAttestTool({ store, signer })
  for (let i = 0; i < 3; i++) {
    const r = await tool.run(
      { action: 'vend', request_uri: `svc://orders/${i}`, params: { slot: i + 1 } },
      {
        runId: 'r',
        sop: 'vend',
        step: 1,
        call: i,
        idempotencyKey: `k${i}`,
        signal: new AbortController().signal,
      },
    )
    t.ok(r.ok)
  }
  const sync = createAttestSync({ store, chain: info, attestorUrl: attestor.url, signer })
  t.same(await sync.runOnce(), { requested: 3, attested: 3, failed: 0, remaining: 0 })
  // Batched: the device and the attestor now run the executor's code, and each sent one
  // transaction for the three lines (its EIP-7702 authorization takes the next nonce too).
  const designator = new RegExp(`^0xef0100${batchExecutor.slice(2)}$`, 'i')
  t.match(await pub.getCode({ address: device.address }), designator, 'device delegated')
  t.match(await pub.getCode({ address: acc.attestor.address }), designator, 'attestor delegated')

  const ex = await exportAttestations(store, join(dir, 'export'))
  const lines = (await readFile(ex.dataPath, 'utf8')).trimEnd().split('\n')
  const requestHashes = (await readFile(ex.requestsPath, 'utf8')).trimEnd().split('\n') as Hex[]
  const manifest = buildManifest(info.agentId, lines, requestHashes)
  const dev = { info: { ...info, accounts: acc } } as unknown as DevChain
  const { url } = await startMarket(t, dev)
  const ownerCookie = await signIn(url, acc.owner.privateKey)
  const key = (await issueKey(url, ownerCookie, acc.owner.privateKey, info.agentId)).json.key as string
  t.ok(key, 'the owner gets a market key for the agent')
  const listing = await postListing(url, key, {
    lines,
    data: `${lines.join('\n')}\n`,
    requestHashes,
    manifest,
  })
  t.equal(listing.status, 201, JSON.stringify(listing.json))
  const slug = listing.json.slug as string
  const v = await api(url, `/api/marketplace/listings/${slug}/verify`, { method: 'POST' })
  t.equal(v.status, 200, JSON.stringify(v.json))
  t.match(v.json, { preview: false, total: 3, verified: true, passed: 3, failed: 0 })

  const price = parseEther(listing.json.priceNative ? String(listing.json.priceNative) : '0.05')
  const buyer = walletClientFor(rpcUrl, acc.buyer.privateKey)
  const tx = await buyer.sendTransaction({ to: acc.payout.address, value: price })
  await pub.waitForTransactionReceipt({ hash: tx })
  const buyerCookie = await signIn(url, acc.buyer.privateKey)
  const signature = await privateKeyToAccount(acc.buyer.privateKey).signMessage({
    message: ['svc marketplace', 'Unlock', `listing: ${slug}`, `tx: ${tx}`].join('\n'),
  })
  const p = await api(url, `/api/marketplace/listings/${slug}/purchase`, {
    body: { txHash: tx, signature },
    cookie: buyerCookie,
  })
  t.equal(p.status, 200, JSON.stringify(p.json))
  const data = await fetch(url + (p.json.access as { dataUrl: string }).dataUrl, {
    headers: { cookie: buyerCookie },
  })
  t.equal(await data.text(), `${lines.join('\n')}\n`, 'the buyer downloads the attested lines')
})

t.test('batched on the official registries: a request hash taken first fails only its line', async (t) => {
  const file = await readChainFile(chainFilePath(home))
  if (!file.ok) throw new Error(file.error)
  const info: ChainInfo = { ...file.value, batchExecutor }
  const cfg = await loadAttestorConfig({ chain: info, env: { SVC_ATTESTOR_KEY: acc.attestor.privateKey } })
  if (!cfg.ok) throw new Error(cfg.error)
  const attestor = await startAttestorServer(cfg.config)
  t.teardown(() => attestor.close())
  const store = await openAttestStore(join(dir, 'attest-taken'))
  t.teardown(() => store.close())
  const signer = signerFromKey(deviceKey)
  const tool = createChainAttestTool({ store, signer })
  for (let i = 0; i < 5; i++)
    t.ok(
      (
        await tool.run(
          { action: 'vend', request_uri: `svc://taken/${i}`, params: { i } },
          {
            runId: 'r',
            sop: 'vend',
            step: 1,
            call: i,
            idempotencyKey: `t${i}`,
            signal: new AbortController().signal,
          },
        )
      ).ok,
    )
  const taken = (await store.get(2))!
  const owner = walletClientFor(rpcUrl, acc.owner.privateKey)
  await pub.waitForTransactionReceipt({
    hash: await owner.writeContract({
      address: regs.validationRegistry,
      abi: parseAbi(['function validationRequest(address, uint256, string, bytes32)']),
      functionName: 'validationRequest',
      args: [acc.deployer.address, BigInt(info.agentId), 'svc://elsewhere', taken.requestHash],
    }),
  })
  const sync = createAttestSync({ store, chain: info, attestorUrl: attestor.url, signer })
  t.same(await sync.runOnce(), { requested: 4, attested: 4, failed: 1, remaining: 0 })
  t.match((await store.get(2))!.error, /is held by another request .*\(validationRequest reverted: exists\)/)
})

t.test(
  'an agent changing hands on the official registry: the new owner’s key call revokes the old holder’s key',
  async (t) => {
    const file = await readChainFile(chainFilePath(home))
    if (!file.ok) throw new Error(file.error)
    const info: ChainInfo = file.value
    const [holder, newOwner] = [anvilAccount(8), anvilAccount(9)]
    const hw = walletClientFor(rpcUrl, holder.privateKey)
    const registerAbi = parseAbi([
      'function register(string agentURI) returns (uint256)',
      'function transferFrom(address from, address to, uint256 tokenId)',
    ])
    const reg = await pub.simulateContract({
      account: hw.account,
      address: regs.identityRegistry,
      abi: registerAbi,
      functionName: 'register',
      args: ['svc://agents/changing-hands'],
    })
    await pub.waitForTransactionReceipt({ hash: await hw.writeContract(reg.request) })
    const agentId = reg.result.toString()
    const dev = { info: { ...info, accounts: acc } } as unknown as DevChain
    const { url } = await startMarket(t, dev)
    const holderCookie = await signIn(url, holder.privateKey)
    const old = await issueKey(url, holderCookie, holder.privateKey, agentId)
    t.equal(old.status, 201, JSON.stringify(old.json))
    await pub.waitForTransactionReceipt({
      hash: await hw.writeContract({
        address: regs.identityRegistry,
        abi: registerAbi,
        functionName: 'transferFrom',
        args: [holder.address, newOwner.address, BigInt(agentId)],
      }),
    })
    const fresh = await issueKey(url, await signIn(url, newOwner.privateKey), newOwner.privateKey, agentId)
    t.equal(fresh.status, 201, `the new owner gets a key: ${JSON.stringify(fresh.json)}`)
    const keys = (await api(url, '/api/marketplace/keys', { cookie: holderCookie })).json.keys as Record<
      string,
      unknown
    >[]
    t.match(
      keys.find((k) => k.id === old.json.id),
      {
        status: 'revoked',
        revokedReason: `wallet ${holder.address.toLowerCase()} no longer holds agent ${agentId}: it is held by ${newOwner.address.toLowerCase()}`,
      },
    )
    const listed = await postListing(url, old.json.key as string, dataset(1, agentId))
    t.equal(listed.status, 403, 'the old key cannot list')
    t.match(listed.json.error, /was revoked/)
  },
)

t.test(
  'a placeholder proxy (no implementation): preflight refuses, nothing sent, nothing attested',
  async (t) => {
    const placeholder = await deployPlaceholderProxy(deployer, pub, regs.identityRegistry)
    t.equal(
      await pub.readContract({ address: placeholder, abi: readAbi, functionName: 'getVersion' }),
      '0.0.1',
      'the placeholder answers its own version',
    )
    const file = await readChainFile(chainFilePath(home))
    if (!file.ok) throw new Error(file.error)
    const info: ChainInfo = { ...file.value, validationRegistry: placeholder }
    const store = await openAttestStore(join(dir, 'attest-placeholder'))
    t.teardown(() => store.close())
    const signer = signerFromKey(deviceKey)
    await createChainAttestTool({ store, signer }).run(
      { action: 'vend', request_uri: 'svc://orders/p', params: { slot: 1 } },
      {
        runId: 'r',
        sop: 'vend',
        step: 1,
        call: 0,
        idempotencyKey: 'p',
        signal: new AbortController().signal,
      },
    )
    const nonce = await pub.getTransactionCount({ address: device.address })
    const warned: string[] = []
    const sync = createAttestSync({
      store,
      chain: info,
      attestorUrl: 'http://127.0.0.1:1',
      signer,
      log: { warn: (m: string) => void warned.push(m) },
    })
    const err = await sync.runOnce().then(
      () => undefined,
      (e: Error) => e.message,
    )
    t.match(
      err,
      new RegExp(
        `^chain: preflight failed: validationRegistry ${placeholder}: not an ERC-8004 v2\\.0\\.0 ValidationRegistry \\(getVersion "0\\.0\\.1"; getValidationStatus [^)]+\\)`,
      ),
    )
    t.match(err, /svc chain deploy-validation --identity 0x/)
    t.notMatch(err, /\n/, 'one line')
    t.match(store.counts(), { total: 1, pending: 1, sending: 0, requested: 0, attested: 0, failed: 0 })
    t.equal(await pub.getTransactionCount({ address: device.address }), nonce, 'no transaction sent')

    // The same refusal from `svc chain check` and from the attestor at start.
    const chainFile = join(dir, 'placeholder-chain.json')
    await writeChainFile(chainFile, info)
    const c = await svc(['chain', 'check', '--chain', chainFile])
    t.equal(c.code, 1)
    t.match(c.out, new RegExp(`FAIL  validationRegistry ${placeholder}: not an ERC-8004`))
    const cfg = await loadAttestorConfig({ chain: info, env: { SVC_ATTESTOR_KEY: acc.attestor.privateKey } })
    if (!cfg.ok) throw new Error(cfg.error)
    await t.rejects(startAttestorServer(cfg.config), /attestor: preflight failed: validationRegistry/)
  },
)

t.test('bad input to enrol: one line, nothing changed on chain or on disk', async (t) => {
  const before = await readFile(chainFilePath(home), 'utf8')
  const otherChain = await startAnvil({ chainId: 31337 })
  t.teardown(() => otherChain.stop())
  const buyerKey = join(dir, 'buyer.key')
  await writeFile(buyerKey, `${acc.buyer.privateKey}\n`, { mode: 0o600 })
  const looseKey = join(dir, 'loose.key')
  await writeFile(looseKey, `${acc.owner.privateKey}\n`, { mode: 0o644 })
  const dead = `http://127.0.0.1:${await freePort()}`
  const idFlags = ['--identity', regs.identityRegistry, '--validation', regs.validationRegistry]
  const cases: { name: string; args: string[]; env?: Record<string, string>; want: RegExp }[] = [
    {
      name: 'a wrong chain id',
      args: ['--rpc-url', otherChain.rpcUrl, ...idFlags, ...withKeystore],
      env: { OWNER_PASS: PASS },
      want: /chain id 31337, not 10143/,
    },
    {
      name: 'an address with no code',
      args: [
        '--rpc-url',
        rpcUrl,
        '--identity',
        '0x000000000000000000000000000000000000dEaD',
        '--validation',
        regs.validationRegistry,
        ...withKeystore,
      ],
      env: { OWNER_PASS: PASS },
      want: /identityRegistry 0x000000000000000000000000000000000000dEaD: no contract code/,
    },
    {
      name: 'a wallet that is not the owner',
      args: [...net, '--key-file', buyerKey, '--agent-id', '0'],
      want: new RegExp(
        `wallet ${acc.buyer.address} is not the owner of agent 0 .*its owner is ${acc.owner.address}`,
      ),
    },
    {
      name: 'an agent that does not exist (the official error, by name)',
      args: [...net, ...withKeystore, '--agent-id', '99'],
      env: { OWNER_PASS: PASS },
      want: /agent 99 on identity registry 0x[0-9a-fA-F]{40}: ERC721NonexistentToken\(99\)/,
    },
    {
      name: 'a wrong passphrase',
      args: [...net, ...withKeystore],
      env: { OWNER_PASS: 'wrong horse' },
      want: /wrong passphrase/,
    },
    {
      name: 'a key file others can read',
      args: [...net, '--key-file', looseKey],
      want: /readable by others \(mode 644\)/,
    },
    {
      name: 'an RPC that does not answer',
      args: ['--rpc-url', dead, ...idFlags, ...withKeystore],
      env: { OWNER_PASS: PASS },
      want: new RegExp(`rpc ${dead}: no answer to eth_chainId`),
    },
    {
      name: 'a placeholder validation registry',
      args: [
        '--rpc-url',
        rpcUrl,
        '--identity',
        regs.identityRegistry,
        '--validation',
        await deployPlaceholderProxy(deployer, pub, regs.identityRegistry),
        ...withKeystore,
      ],
      env: { OWNER_PASS: PASS },
      want: /validationRegistry 0x[0-9a-fA-F]{40}: not an ERC-8004/,
    },
  ]
  for (const c of cases) {
    const nonces = [await ownerNonce(), await pub.getTransactionCount({ address: acc.buyer.address })]
    const r = await svc(['chain', 'enrol', ...c.args, '--attestor', acc.attestor.address], c.env ?? {})
    t.not(r.code, 0, `${c.name}: fails`)
    t.match(r.err, c.want, c.name)
    t.equal(r.err.trimEnd().split('\n').length, 1, `${c.name}: one line (${r.err.trimEnd()})`)
    t.same(
      [await ownerNonce(), await pub.getTransactionCount({ address: acc.buyer.address })],
      nonces,
      `${c.name}: nothing sent`,
    )
    t.equal(await readFile(chainFilePath(home), 'utf8'), before, `${c.name}: chain file unchanged`)
  }
  // A hub with no device key yet: a refused enrol writes none.
  const fresh = join(dir, 'home-refused')
  const r = await svc(
    ['chain', 'enrol', ...net, ...withKeystore, '--attestor', acc.attestor.address],
    { OWNER_PASS: 'no' },
    fresh,
  )
  t.equal(r.code, 1)
  await t.rejects(stat(svcPaths({ SVC_HOME: fresh }).deviceKey), 'no device key written')
  await t.rejects(stat(chainFilePath(fresh)), 'no chain file written')
})

t.test('the passphrase through the real command and standard input', async (t) => {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
  const run = async (stdin: string) => {
    const child = spawn(
      process.execPath,
      [
        join(root, 'bin/svc.js'),
        'chain',
        'enrol',
        ...net,
        '--keystore',
        keystore,
        '--passphrase-stdin',
        '--dry-run',
      ],
      { env: { ...process.env, SVC_HOME: home }, stdio: ['pipe', 'pipe', 'pipe'] },
    )
    t.teardown(() => {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL')
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.stdin.end(stdin)
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    return { code, out, err }
  }
  const good = await run(`${PASS}\n`)
  t.equal(good.code, 0, good.err)
  t.match(good.out, /skip\s+register/, 'the enrolled agent, read from the chain file')
  const bad = await run('not it\n')
  t.equal(bad.code, 1)
  t.match(
    bad.err,
    /^svc chain: keystore .*: wrong passphrase \(the MAC does not match\) \(nothing changed\)\n$/,
  )
})
