// GET /enrol: "Enrol a device", for a machine owner whose key is in a browser wallet. The wallet
// registers an agent if the owner has none, then approves the device as operator and sets it as
// the agent's wallet with the signature the device made (`svc chain enrol --print-signature`);
// chain/README.md "A real network" has the command-line way. Server-rendered; the script and
// its calldata encoder are served from this origin (static/enrol.js, static/enrol-calldata.js).
import type { FastifyPluginAsync } from 'fastify'
import { getAddress } from 'viem'
import { currentSession } from '../auth/session.ts'
import type { MarketContext } from '../context.ts'
import { type Html, html } from '../../web/html.ts'
import { page } from './layout.ts'

// As every page (index.ts): scripts and styles only from this origin, no framing.
const CSP =
  "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

export function enrolMain(identityRegistry: string, chainId: number): Html {
  return html`<h1>Enrol a device</h1>
<section id="enrol" data-identity-registry="${identityRegistry}">
<p>Let a machine's device key attest for your agent on chain ${chainId} (IdentityRegistry <code>${identityRegistry}</code>). Your wallet sends the transactions; the device never sees your key.</p>
<h2>1. An agent</h2>
<p>If you have no agent yet, register one; the page shows its id.</p>
<p><button type="button" id="enrol-register">Register a new agent</button></p>
<h2>2. The device's signature</h2>
<p>On the device run <code>svc chain enrol --print-signature --agent-id ID --owner YOUR_ADDRESS --json</code> and paste its output here within five minutes (the registry refuses an older signature).</p>
<form id="enrol-form">
<label for="enrol-signature">Device signature (JSON)</label>
<textarea id="enrol-signature" name="signature" rows="8" required spellcheck="false"></textarea>
<button type="submit">Approve the device and set it as the agent's wallet</button>
</form>
</section>
<div id="enrol-status" role="status" aria-live="polite" hidden></div>`
}

export const enrolPage =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    app.get('/enrol', { schema: { hide: true } }, async (req, reply) => {
      const s = await currentSession(req, ctx.session)
      const body = page({
        title: 'Enrol a device',
        displayName: ctx.config.displayName,
        chainId: ctx.chainConfig.chainId,
        account: s ? getAddress(s.address) : null,
        nav: 'none',
        main: enrolMain(ctx.chainConfig.identityRegistry, ctx.chainConfig.chainId),
        scripts: ['enrol.js'],
      })
      return reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'same-origin')
        .header('cache-control', 'no-store')
        .send(body.value)
    })
  }
