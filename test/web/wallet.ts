// An EIP-1193 wallet injected into the page for the browser tests. The page sees
// `window.ethereum`; every request is forwarded to Node through page.exposeFunction, where viem
// signs with an anvil dev key and sends to the test's anvil. Behaviour can change mid-test.
import type { Page } from 'playwright-core'
import { type Hex, createPublicClient, createWalletClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { svcChain } from '../../chain/clients.ts'

export interface WalletBehaviour {
  /** The chain id the wallet reports; wallet_switchEthereumChain to the real chain changes it. */
  chainId: number
  /** Answer personal_sign with `{ code: 4001 }` when this returns true for the message text. */
  rejectSign: (message: string) => boolean
}

export interface TestWallet {
  address: Hex
  behaviour: WalletBehaviour
  /** Every method the page asked for, in order. */
  calls: string[]
}

type Answer = { result: unknown } | { error: { code: number; message: string } }

export async function injectWallet(
  page: Page,
  privateKey: Hex,
  rpcUrl: string,
  chainId: number,
  behaviour: Partial<WalletBehaviour> = {},
): Promise<TestWallet> {
  const account = privateKeyToAccount(privateKey)
  const chain = svcChain(rpcUrl)
  const pub = createPublicClient({ chain, transport: http(rpcUrl) })
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) })
  const w: TestWallet = {
    address: account.address,
    behaviour: { chainId, rejectSign: () => false, ...behaviour },
    calls: [],
  }

  const handle = async (method: string, params: unknown[]): Promise<Answer> => {
    w.calls.push(method)
    switch (method) {
      case 'eth_requestAccounts':
      case 'eth_accounts':
        return { result: [account.address] }
      case 'eth_chainId':
        return { result: `0x${w.behaviour.chainId.toString(16)}` }
      case 'wallet_switchEthereumChain': {
        const want = Number.parseInt(String((params[0] as { chainId?: string } | undefined)?.chainId), 16)
        if (want !== chainId) return { error: { code: 4902, message: `Unrecognized chain ID ${want}` } }
        w.behaviour.chainId = want
        return { result: null }
      }
      case 'personal_sign': {
        const [data, from] = params as [Hex, string]
        if (String(from).toLowerCase() !== account.address.toLowerCase())
          return { error: { code: 4100, message: `unknown account ${from}` } }
        const text = Buffer.from(data.slice(2), 'hex').toString('utf8')
        if (w.behaviour.rejectSign(text))
          return { error: { code: 4001, message: 'User rejected the request.' } }
        return { result: await account.signMessage({ message: { raw: data } }) }
      }
      case 'eth_sendTransaction': {
        if (w.behaviour.chainId !== chainId)
          return { error: { code: 4901, message: 'wallet is on another chain' } }
        const tx = params[0] as { to: Hex; value?: Hex; data?: Hex }
        const hash = await wallet.sendTransaction({
          to: tx.to,
          value: tx.value ? BigInt(tx.value) : 0n,
          ...(tx.data ? { data: tx.data } : {}),
        })
        return { result: hash }
      }
      default:
        return { result: await pub.request({ method: method as 'eth_blockNumber', params: params as never }) }
    }
  }
  await page.exposeFunction('__svcWallet', async (method: string, params: unknown[]): Promise<Answer> => {
    try {
      return await handle(method, Array.isArray(params) ? params : [])
    } catch (err) {
      return {
        error: { code: -32603, message: err instanceof Error ? err.message.split('\n')[0]! : String(err) },
      }
    }
  })
  await page.addInitScript(() => {
    type Bridge = (
      m: string,
      p: unknown[],
    ) => Promise<{ result?: unknown; error?: { code: number; message: string } }>
    const bridge = (window as unknown as { __svcWallet: Bridge }).__svcWallet
    ;(window as unknown as { ethereum: unknown }).ethereum = {
      isSvcTestWallet: true,
      async request(args: { method: string; params?: unknown[] }) {
        const r = await bridge(args.method, args.params ?? [])
        if (r.error) throw Object.assign(new Error(r.error.message), { code: r.error.code })
        return r.result
      },
      on() {},
      removeListener() {},
    }
  })
  return w
}
