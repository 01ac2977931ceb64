// The machine-keys page: issue an agent key from a challenge signature, show it once with a
// copy button, list the account's keys. Pure: given the keys, returns markup.
import { type Html, html } from './html.ts'

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
  if (keys.length === 0) return html`<tr><td colspan="6">No keys yet.</td></tr>`
  return html`${keys.map(
    (k) => html`<tr>
  <td><code>svc_${k.prefix}…</code></td><td>${k.agentId}</td><td><code>${k.wallet}</code></td><td>${k.device ? html`<code>${k.device}</code>` : '—'}</td>
  <td><time datetime="${k.createdAt}">${k.createdAt.replace('T', ' ').slice(0, 19)}</time></td>
  <td>${k.status}${k.revokedReason ? html`: ${k.revokedReason}` : ''}</td>
</tr>`,
  )}`
}

export function keysMain(account: string | null, keys: readonly KeyRow[]): Html {
  if (!account)
    return html`<h1>Machine keys</h1>
<p>Machine owners issue a bearer key (<code>svc_…</code>) for their device here. Sign in with the wallet that owns the machine's agent to continue.</p>`
  return html`<h1>Machine keys</h1>
<section class="panel" aria-labelledby="issue-h">
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
  </div>
</section>
<section aria-labelledby="list-h">
  <h2 id="list-h">Your keys</h2>
  <table class="keys">
    <thead><tr><th scope="col">Key</th><th scope="col">Agent</th><th scope="col">Wallet</th><th scope="col">Device</th><th scope="col">Created (UTC)</th><th scope="col">Status</th></tr></thead>
    <tbody id="key-rows">${keyRows(keys)}</tbody>
  </table>
</section>`
}
