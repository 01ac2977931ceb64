// The machine-keys page: for a visitor without a wallet (or not signed in), what agents and keys
// are and how to get one; signed in, issue an agent key from a challenge signature, show it once
// with a copy button and the `npx svc key set …` command to run on the device, list the
// account's keys and revoke one. Pure: given the keys, returns markup.
import { type Html, html } from '../../web/html.ts'

export interface KeyRow {
  id: string
  agentId: string
  prefix: string
  wallet: string
  device: string | null
  createdAt: string
  status: string
  revokedReason: string | null
}

export function keyRows(keys: readonly KeyRow[]): Html {
  if (keys.length === 0) return html`<tr><td colspan="7">No keys yet.</td></tr>`
  return html`${keys.map(
    (k) => html`<tr>
  <td><code>svc_${k.prefix}…</code></td><td>${k.agentId}</td><td><code>${k.wallet}</code></td><td>${k.device ? html`<code>${k.device}</code>` : '—'}</td>
  <td><time datetime="${k.createdAt}">${k.createdAt.replace('T', ' ').slice(0, 19)}</time></td>
  <td>${k.status}${k.revokedReason ? html`: ${k.revokedReason}` : ''}</td>
  <td>${k.status === 'active' ? html`<button type="button" class="revoke secondary" data-id="${k.id}" aria-label="Revoke key svc_${k.prefix}…">Revoke</button>` : ''}</td>
</tr>`,
  )}`
}

const explain = (origin: string): Html => html`<section class="prose" aria-labelledby="how-h">
<h2 id="how-h">How a machine lists its data</h2>
<ol>
  <li><strong>An agent.</strong> Each machine has an agent: an NFT on chain 10143 (ERC-8004 IdentityRegistry) owned by the machine's owner. <a href="/enrol">Enrol a device</a> registers one from your wallet and lets the device's key sign for it.</li>
  <li><strong>A key.</strong> The owner signs a challenge here with the wallet that owns the agent; the market checks on chain that it does and issues a bearer key <code>svc_…</code> for the device. The key is shown once.</li>
  <li><strong>On the device</strong>, store the key: <code>npx svc key set svc_… --market ${origin}</code>. Then <code>npx svc listing create …</code> lists attested lines; the hub posts them with the key.</li>
  <li><strong>Revoke</strong> a key here when a device is lost or retired: it can no longer list. A key is also revoked by itself when its wallet no longer owns the agent.</li>
</ol>
<p>No wallet yet? A browser wallet (an EIP-1193 extension such as MetaMask, Rabby or Frame) signs in; browsing, the preview and verifying need none.</p>
</section>`

export function keysMain(
  account: string | null,
  keys: readonly KeyRow[],
  origin: string,
  devChain = false,
): Html {
  if (!account)
    return html`<h1>Machine keys</h1>
<p class="lead">Machine owners issue a bearer key (<code>svc_…</code>) here for their device, so it can list the lines it attested. Sign in with the wallet that owns the machine's agent to continue.</p>
<p><button type="button" class="sign-in-here">Sign in with wallet</button></p>
${explain(origin)}
${devChain ? html`<p>Trying it on the local chain? The <a href="/guide/local-chain">local chain guide</a> gives the network and the dev accounts (the owner is anvil account 1).</p>` : ''}`
  return html`<h1>Machine keys</h1>
<section class="panel" aria-labelledby="issue-h" id="issue" data-origin="${origin}">
  <h2 id="issue-h">Issue a key</h2>
  <p>Your wallet signs a challenge; the market checks on chain that the wallet owns the agent, then issues a key for its device.</p>
  <form id="issue-form">
    <label>Agent id <input name="agentId" id="agent-id" required inputmode="numeric" pattern="[0-9]{1,78}" autocomplete="off"></label>
    <button type="submit" id="issue-button">Sign challenge and issue key</button>
  </form>
  <div id="issue-status" role="status" aria-live="polite"></div>
  <div id="new-key" hidden>
    <p><strong>Copy this key now: it is shown only once.</strong></p>
    <label for="new-key-value">New key</label>
    <div class="copy"><input id="new-key-value" readonly size="60"> <button type="button" id="copy-key">Copy</button></div>
    <p id="copy-status" role="status" aria-live="polite"></p>
    <p>Then, on the device, run:</p>
    <pre class="command"><code id="key-command"></code></pre>
    <p class="muted">It stores the key in <code>&lt;SVC_HOME&gt;/market.key</code> (mode 0600) and this market as the one to list on. <code>npx svc key set --stdin --market ${origin}</code> reads the key from the terminal instead, out of your shell history.</p>
  </div>
</section>
<section aria-labelledby="list-h">
  <h2 id="list-h">Your keys</h2>
  <div id="revoke-status" role="status" aria-live="polite"></div>
  <div class="scroll">
  <table class="keys">
    <thead><tr><th scope="col">Key</th><th scope="col">Agent</th><th scope="col">Wallet</th><th scope="col">Device</th><th scope="col">Created (UTC)</th><th scope="col">Status</th><th scope="col"><span class="sr">Action</span></th></tr></thead>
    <tbody id="key-rows">${keyRows(keys)}</tbody>
  </table>
  </div>
</section>
${explain(origin)}`
}
