// GET /guide/local-chain: how to buy on the market's local dev chain (`svc chain dev`): the network
// to add to a wallet, its RPC URL and chain id, and the funded dev buyer account. Served only when
// the chain file names dev accounts (anvil's well-known keys); a real network has no such page.
import { type Html, html } from '../../web/html.ts'

export interface LocalChain {
  rpcUrl: string
  chainId: number
  currency: string
  buyer: { address: string; privateKey: string }
}

export function localChainMain(c: LocalChain): Html {
  return html`<p class="crumbs"><a href="/marketplace">← All datasets</a></p>
<article class="prose">
<h1>Buy on the local chain</h1>
<p>This market runs on a local development chain (anvil, started by <code>npx svc chain dev</code>), not on a public network. Its money is play money: to try a purchase, add the network to your wallet and import the funded dev buyer account.</p>
<h2>1. Add the network</h2>
<div class="scroll"><table class="guide">
<tbody>
<tr><th scope="row">Network name</th><td>svc local (anvil)</td></tr>
<tr><th scope="row">RPC URL</th><td><code>${c.rpcUrl}</code></td></tr>
<tr><th scope="row">Chain id</th><td><code>${c.chainId}</code> (hex <code>0x${c.chainId.toString(16)}</code>)</td></tr>
<tr><th scope="row">Currency symbol</th><td>${c.currency}</td></tr>
<tr><th scope="row">Block explorer</th><td>none</td></tr>
</tbody></table></div>
<p>In MetaMask: Settings → Networks → Add a network manually. The RPC URL must be reachable from the browser: on another machine, forward the port or start the chain on an address it can reach.</p>
<h2>2. Import the dev buyer account</h2>
<p>The dev chain funds anvil's test accounts; account 4 plays the buyer:</p>
<div class="scroll"><table class="guide"><tbody>
<tr><th scope="row">Address</th><td><code>${c.buyer.address}</code></td></tr>
<tr><th scope="row">Private key</th><td><code>${c.buyer.privateKey}</code></td></tr>
</tbody></table></div>
<p class="warn">This key is public (every anvil install has it). Never send real money to it or use it on a real network.</p>
<h2>3. Buy</h2>
<ol>
<li>Open a listing, press <strong>Verify</strong> to see its rows pass.</li>
<li>Press <strong>Buy</strong>: sign in, confirm the payment, sign the unlock message.</li>
<li>Download the data and the manifest; your receipt is under <a href="/purchases">My purchases</a>.</li>
</ol>
</article>`
}
