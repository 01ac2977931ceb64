// The market's "Enrol a device" page: it renders with the site's security headers and loads
// its scripts from this origin; its calldata encoder matches viem's byte for byte; and the
// transactions it asks a wallet to send (sent here as a wallet would, eth_sendTransaction from
// the owner's unlocked anvil account) really enrol the device on the registry, with the
// signature `svc chain enrol --print-signature` made.
import { join } from 'node:path'
import t from 'tap'
import { type Address, type Hex, encodeFunctionData, parseAbi, toHex } from 'viem'
import { identityRegistryAbi } from '../../chain/abi.generated.ts'
import { publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { deviceSignature } from '../../chain/enrol.ts'
import { startWebMarket } from '../web/web-helpers.ts'

interface Calldata {
  encodeRegister(): Hex
  encodeSetApprovalForAll(operator: string): Hex
  encodeSetAgentWallet(agentId: string, wallet: string, deadline: string, signature: string): Hex
  agentIdFromReceipt(receipt: unknown, identityRegistry: string): string | null
  checkSignatureJson(
    text: string,
    ctx: { chainId: number; identityRegistry: string; owner: string },
  ): { ok: true; value: Record<string, string> } | { ok: false; error: string }
}
const modPath = join(import.meta.dirname, '..', '..', 'market', 'pages', 'static', 'enrol-calldata.js')
const cd = (await import(modPath)) as Calldata

const dev = await startDevChain()
t.teardown(() => dev.stop())
const pub = publicClientFor(dev.rpcUrl)
const { owner, buyer } = dev.accounts
const id = dev.identityRegistry
const abi = parseAbi(['function register()'])

t.test('the encoder matches viem', async (t) => {
  t.equal(cd.encodeRegister(), encodeFunctionData({ abi, functionName: 'register' }))
  t.equal(
    cd.encodeSetApprovalForAll(buyer.address),
    encodeFunctionData({
      abi: identityRegistryAbi,
      functionName: 'setApprovalForAll',
      args: [buyer.address, true],
    }),
  )
  const sig = toHex(new Uint8Array(65).map((_, i) => i + 1))
  t.equal(
    cd.encodeSetAgentWallet('12345678901234567890', buyer.address, '1795467500', sig),
    encodeFunctionData({
      abi: identityRegistryAbi,
      functionName: 'setAgentWallet',
      args: [12345678901234567890n, buyer.address, 1795467500n, sig],
    }),
  )
  t.throws(() => cd.encodeSetApprovalForAll('0x12'), /not an address/)
})

// The wallet's part, as a browser wallet does it: eth_sendTransaction, then the receipt.
async function walletSend(from: Address, data: Hex) {
  const hash = (await pub.request({
    method: 'eth_sendTransaction' as never,
    params: [{ from, to: id, data }] as never,
  })) as Hex
  await pub.waitForTransactionReceipt({ hash })
  return pub.request({ method: 'eth_getTransactionReceipt', params: [hash] })
}

t.test("the page's transactions enrol a device with its printed signature", async (t) => {
  const receipt = await walletSend(owner.address, cd.encodeRegister())
  const agentId = cd.agentIdFromReceipt(receipt, id)
  t.equal(agentId, '1', 'the second agent on the dev chain')
  const device = buyer
  const sig = await deviceSignature({
    rpcUrl: dev.rpcUrl,
    identityRegistry: id,
    agentId: BigInt(agentId!),
    owner: owner.address,
    deviceKey: device.privateKey,
  })
  const text = JSON.stringify(sig)
  t.match(cd.checkSignatureJson(text, { chainId: 10143, identityRegistry: id, owner: buyer.address }), {
    ok: false,
    error: /owner: the device signed for .* but your wallet is/,
  })
  t.match(cd.checkSignatureJson(text, { chainId: 1, identityRegistry: id, owner: owner.address }), {
    ok: false,
    error: /chainId: 10143, but this market is on chain 1/,
  })
  t.match(cd.checkSignatureJson('{', { chainId: 10143, identityRegistry: id, owner: owner.address }), {
    ok: false,
    error: /not JSON/,
  })
  const c = cd.checkSignatureJson(text, { chainId: 10143, identityRegistry: id, owner: owner.address })
  t.ok(c.ok)
  if (!c.ok) return
  await walletSend(owner.address, cd.encodeSetApprovalForAll(c.value.newWallet!))
  await walletSend(
    owner.address,
    cd.encodeSetAgentWallet(c.value.agentId!, c.value.newWallet!, c.value.deadline!, c.value.signature!),
  )
  const read = <T>(functionName: string, args: unknown[]) =>
    pub.readContract({ address: id, abi: identityRegistryAbi, functionName, args } as never) as Promise<T>
  t.equal(await read<Address>('getAgentWallet', [1n]), device.address)
  t.equal(await read<boolean>('isApprovedForAll', [owner.address, device.address]), true)
})

t.test('GET /enrol: the page, its headers, its same-origin scripts', async (t) => {
  const { url } = await startWebMarket(t, dev)
  const res = await fetch(`${url}/enrol`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-security-policy'), /script-src 'self'/)
  const body = await res.text()
  t.match(body, /<h1>Enrol a device<\/h1>/)
  t.match(body, new RegExp(`data-identity-registry="${id}"`, 'i'))
  t.match(body, /<script type="module" src="\/assets\/enrol\.js"><\/script>/)
  t.notMatch(body, /src="https?:/, 'nothing from another origin')
  for (const f of ['enrol.js', 'enrol-calldata.js']) {
    const a = await fetch(`${url}/assets/${f}`)
    t.equal(a.status, 200, f)
    t.match(a.headers.get('content-type'), /text\/javascript/)
    t.notMatch(await a.text(), /from ['"]https?:/, `${f} imports only from this origin`)
  }
})
