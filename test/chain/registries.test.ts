// The registries on a real anvil: ERC-8004 identity (ids from 0, agent wallet, cleared on
// transfer) and validation (owner/operator requests, validator-only responses, first-come
// request hashes, "unknown" for an unknown hash).
import t, { type Test } from 'tap'
import { type Hex, keccak256, stringToHex } from 'viem'
import { identityRegistryAbi, validationRegistryAbi } from '../../chain/abi.generated.ts'
import { anvilAccount } from '../../chain/accounts.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { registerAgent, setAgentWallet } from '../../chain/deploy.ts'
import { startDevChain } from '../../chain/dev.ts'
import { readAgentWallet, readOwnerOf, readValidationStatus } from '../../chain/reads.ts'

const chain = await startDevChain()
t.teardown(() => chain.stop())
const pub = publicClientFor(chain.rpcUrl)
const { owner, device, attestor, buyer } = chain.accounts
const w = (k: Hex) => walletClientFor(chain.rpcUrl, k)
const reqHash = (s: string) => keccak256(stringToHex(s))

async function reverts(t: Test, p: Promise<unknown>, reason: string) {
  await t.rejects(p, new RegExp(reason), `reverts "${reason}"`)
}

t.test('the demo agent: id 0, owned by owner, wallet = device, device approved', async (t) => {
  t.equal(chain.agentId, '0')
  const o = await readOwnerOf(pub, chain.identityRegistry, 0n)
  t.same(o, { ok: true, value: owner.address })
  t.same(await readAgentWallet(pub, chain.identityRegistry, 0n), { ok: true, value: device.address })
  t.equal(
    await pub.readContract({
      address: chain.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'isApprovedForAll',
      args: [owner.address, device.address],
    }),
    true,
  )
  const missing = await readOwnerOf(pub, chain.identityRegistry, 999n)
  t.equal(missing.ok, false)
  if (!missing.ok) t.equal(missing.kind, 'reverted')
})

t.test('ids count up; wallet defaults to the registrant and is cleared on transfer', async (t) => {
  const b = w(buyer.privateKey)
  const id = await registerAgent(b, pub, chain.identityRegistry, 'svc://agents/second')
  t.equal(id, 1n)
  t.same(await readAgentWallet(pub, chain.identityRegistry, id), { ok: true, value: buyer.address })
  const other = anvilAccount(7)
  await setAgentWallet(b, pub, chain.identityRegistry, id, other.privateKey)
  t.same(await readAgentWallet(pub, chain.identityRegistry, id), { ok: true, value: other.address })
  const h = await b.writeContract({
    address: chain.identityRegistry,
    abi: identityRegistryAbi,
    functionName: 'transferFrom',
    args: [buyer.address, owner.address, id],
  })
  await pub.waitForTransactionReceipt({ hash: h })
  t.same(await readOwnerOf(pub, chain.identityRegistry, id), { ok: true, value: owner.address })
  t.same(await readAgentWallet(pub, chain.identityRegistry, id), {
    ok: true,
    value: '0x0000000000000000000000000000000000000000',
  })
})

t.test('setAgentWallet refuses a signature by another key', async (t) => {
  const o = w(owner.privateKey)
  // sign as account 8 but claim account 9: the signature names the wrong wallet
  const a8 = anvilAccount(8)
  const a9 = anvilAccount(9)
  const block = await pub.getBlock()
  const sig = await (await import('viem/accounts')).privateKeyToAccount(a8.privateKey).signTypedData({
    domain: {
      name: 'ERC8004IdentityRegistry',
      version: '1',
      chainId: 10143,
      verifyingContract: chain.identityRegistry,
    },
    types: {
      AgentWalletSet: [
        { name: 'agentId', type: 'uint256' },
        { name: 'newWallet', type: 'address' },
        { name: 'owner', type: 'address' },
        { name: 'deadline', type: 'uint256' },
      ],
    },
    primaryType: 'AgentWalletSet',
    message: { agentId: 0n, newWallet: a9.address, owner: owner.address, deadline: block.timestamp + 60n },
  })
  await reverts(
    t,
    o.writeContract({
      address: chain.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'setAgentWallet',
      args: [0n, a9.address, block.timestamp + 60n, sig],
    }),
    'invalid wallet sig',
  )
  t.same(
    await readAgentWallet(pub, chain.identityRegistry, 0n),
    { ok: true, value: device.address },
    'unchanged',
  )
})

t.test('validation: request by operator, response by validator, first-come, unknown', async (t) => {
  const dev = w(device.privateKey)
  const att = w(attestor.privateKey)
  const rh = reqHash('line-1')
  const unknown = await readValidationStatus(pub, chain.validationRegistry, reqHash('never'))
  t.same(unknown, { ok: false, code: 'NOT_FOUND', kind: 'unknown', error: 'unknown request hash' })

  await reverts(
    t,
    w(buyer.privateKey).writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationRequest',
      args: [attestor.address, 0n, 'svc://r/1', rh],
    }),
    'Not authorized',
  )
  const h1 = await dev.writeContract({
    address: chain.validationRegistry,
    abi: validationRegistryAbi,
    functionName: 'validationRequest',
    args: [attestor.address, 0n, 'svc://r/1', rh],
  })
  t.equal((await pub.waitForTransactionReceipt({ hash: h1 })).status, 'success')
  const pending = await readValidationStatus(pub, chain.validationRegistry, rh)
  t.ok(pending.ok)
  if (pending.ok) {
    t.equal(pending.value.validator, attestor.address)
    t.equal(pending.value.agentId, 0n)
    t.equal(pending.value.response, 0)
    t.equal(pending.value.tag, '')
  }
  // first-come: the same hash cannot be requested again, even by the owner
  await reverts(
    t,
    w(owner.privateKey).writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationRequest',
      args: [buyer.address, 0n, 'svc://r/x', rh],
    }),
    'exists',
  )

  const ph = reqHash('params')
  await reverts(
    t,
    dev.writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationResponse',
      args: [rh, 100, 'u', ph, 'svc-action'],
    }),
    'not validator',
  )
  await reverts(
    t,
    att.writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationResponse',
      args: [rh, 101, 'u', ph, 'svc-action'],
    }),
    'resp>100',
  )
  await reverts(
    t,
    att.writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationResponse',
      args: [reqHash('nope'), 100, 'u', ph, 'svc-action'],
    }),
    'unknown',
  )
  const h2 = await att.writeContract({
    address: chain.validationRegistry,
    abi: validationRegistryAbi,
    functionName: 'validationResponse',
    args: [rh, 100, 'svc://resp/1', ph, 'svc-action'],
  })
  t.equal((await pub.waitForTransactionReceipt({ hash: h2 })).status, 'success')
  const done = await readValidationStatus(pub, chain.validationRegistry, rh)
  t.ok(done.ok)
  if (done.ok) {
    t.equal(done.value.response, 100)
    t.equal(done.value.responseHash, ph)
    t.equal(done.value.tag, 'svc-action')
    t.ok(done.value.lastUpdate > 0n)
  }
  const [count, avg] = await pub.readContract({
    address: chain.validationRegistry,
    abi: validationRegistryAbi,
    functionName: 'getSummary',
    args: [0n, [attestor.address], 'svc-action'],
  })
  t.equal(count, 1n)
  t.equal(avg, 100)
  t.same(
    await pub.readContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'getAgentValidations',
      args: [0n],
    }),
    [rh],
  )
})

t.test('unreachable RPC is told apart from unknown', async (t) => {
  const dead = publicClientFor('http://127.0.0.1:1', { timeout: 2000 })
  const r = await readValidationStatus(dead, chain.validationRegistry, reqHash('x'))
  t.equal(r.ok, false)
  if (!r.ok) t.equal(r.kind, 'unreachable')
})

t.test('stop() kills anvil by pid', async (t) => {
  const c2 = await startDevChain()
  t.ok(c2.pid > 0)
  process.kill(c2.pid, 0) // alive
  await c2.stop()
  t.throws(() => process.kill(c2.pid, 0), { code: 'ESRCH' })
})
