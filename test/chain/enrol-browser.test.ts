// The "Enrol a device" page in a real Chromium with an EIP-1193 wallet that signs with the
// owner's anvil key (test/web/wallet.ts): register an agent, paste the device's
// `--print-signature` JSON, and the device ends up the agent's operator and wallet on chain.
import t from 'tap'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { identityRegistryAbi } from '../../chain/abi.generated.ts'
import { publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { deviceSignature } from '../../chain/enrol.ts'
import { findChromium, launchChromium } from '../web/browser.ts'
import { injectWallet } from '../web/wallet.ts'
import { startWebMarket } from '../web/web-helpers.ts'

const found = await findChromium()
if (!found.ok) {
  console.log(`# browser test skipped: ${found.reason}`)
  t.test('enrol page in a browser', { skip: found.reason }, async () => {})
} else {
  const dev = await startDevChain()
  t.teardown(() => dev.stop())
  const { url } = await startWebMarket(t, dev)
  const pub = publicClientFor(dev.rpcUrl)
  const ctx = await launchChromium(t, found.executablePath)

  t.test('register, then approve and set the device from its printed signature', async (t) => {
    const page = await ctx.newPage()
    await injectWallet(page, dev.accounts.owner.privateKey, dev.rpcUrl, dev.chainId)
    await page.goto(`${url}/enrol`)
    await page.click('#enrol-register')
    const status = page.locator('#enrol-status')
    await status.getByText(/Registered agent \d+/).waitFor()
    const agentId = /Registered agent (\d+)/.exec((await status.textContent()) ?? '')![1]!
    t.equal(agentId, '1', 'the dev chain had agent 0; this is the next')

    const deviceKey = generatePrivateKey()
    const device = privateKeyToAccount(deviceKey).address
    const sig = await deviceSignature({
      rpcUrl: dev.rpcUrl,
      identityRegistry: dev.identityRegistry,
      agentId: BigInt(agentId),
      owner: dev.accounts.owner.address,
      deviceKey,
    })
    await page.fill('#enrol-signature', JSON.stringify(sig))
    await page.click('#enrol-form button[type=submit]')
    await status.getByText(/is now agent \d+'s operator and wallet/).waitFor()
    const read = <T>(functionName: string, args: unknown[]) =>
      pub.readContract({
        address: dev.identityRegistry,
        abi: identityRegistryAbi,
        functionName,
        args,
      } as never) as Promise<T>
    t.equal(await read<Address>('getAgentWallet', [BigInt(agentId)]), device)
    t.equal(await read<boolean>('isApprovedForAll', [dev.accounts.owner.address, device]), true)

    // A signature made for another owner is refused on the page, before the wallet is asked.
    const other = await deviceSignature({
      rpcUrl: dev.rpcUrl,
      identityRegistry: dev.identityRegistry,
      agentId: BigInt(agentId),
      owner: dev.accounts.buyer.address,
      deviceKey,
    })
    await page.fill('#enrol-signature', JSON.stringify(other))
    await page.click('#enrol-form button[type=submit]')
    await status.getByText(/owner: the device signed for .* but your wallet is/).waitFor()
    t.pass('the wrong owner is named')
  })
}
