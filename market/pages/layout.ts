// The page shell every page shares: header with navigation and the wallet sign-in control,
// a main landmark, the footer, and the page's own scripts. The head carries the favicon, a
// meta description and Open Graph tags for link previews. No external fonts, CDNs or network
// assets.
import { type Html, html } from '../../web/html.ts'

export interface Shell {
  title: string
  displayName: string
  chainId: number
  /** Signed-in account (checksummed) or null. */
  account: string | null
  nav: 'browse' | 'keys' | 'purchases' | 'api' | 'none'
  main: Html
  /** Module scripts under /assets/ to load besides the sign-in control. */
  scripts?: string[]
  /** One or two sentences for `<meta name="description">` and `og:description`. */
  description?: string
  /** The market runs on a dev chain: the footer links the "Buy on the local chain" guide. */
  devChain?: boolean
  /** This page's absolute URL when the market knows its public origin (`og:url`). */
  url?: string | null
}

const short = (a: string): string => `${a.slice(0, 6)}…${a.slice(-4)}`
const DEFAULT_DESCRIPTION =
  'Datasets of machine operation lines, each line attested on chain: verify them for free, then buy with a wallet.'

export function page(s: Shell): Html {
  const navLink = (href: string, label: string, key: Shell['nav']) =>
    html`<a href="${href}"${s.nav === key ? html` aria-current="page"` : ''}>${label}</a>`
  const scripts = ['session.js', ...(s.scripts ?? [])]
  const title = `${s.title} · ${s.displayName} marketplace`
  const description = (s.description ?? DEFAULT_DESCRIPTION).slice(0, 300)
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<meta name="description" content="${description}">
<meta property="og:type" content="website">
<meta property="og:site_name" content="${s.displayName} marketplace">
<meta property="og:title" content="${s.title}">
<meta property="og:description" content="${description}">
${s.url ? html`<meta property="og:url" content="${s.url}">\n` : ''}<meta name="theme-color" content="#0a5bd3">
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/site.css">
${scripts.map((f) => html`<script type="module" src="/assets/${f}"></script>\n`)}
</head>
<body data-chain-id="${s.chainId}" data-display-name="${s.displayName}" data-account="${s.account ?? ''}">
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/marketplace">${s.displayName} marketplace</a>
  <nav aria-label="Main">${navLink('/marketplace', 'Browse', 'browse')} ${s.account ? navLink('/purchases', 'My purchases', 'purchases') : ''} ${navLink('/keys', 'Machine keys', 'keys')}</nav>
  <div class="session" id="session">
    ${
      s.account
        ? html`<span class="who">Signed in as <code title="${s.account}">${short(s.account)}</code></span> <button type="button" id="sign-out">Sign out</button>`
        : html`<button type="button" id="sign-in">Sign in with wallet</button>`
    }
  </div>
</header>
<p class="notice" id="session-status" role="status" aria-live="polite" hidden></p>
<main id="main">
${s.main}
</main>
<footer class="foot">
  <p>Records are attested on chain ${s.chainId}. A passing row proves the device key signed that line, not that the physical action happened.</p>
  <nav aria-label="Footer"><a href="/licenses">Licences</a> <a href="/api/docs">API reference</a> <a href="/api/openapi.json">OpenAPI (JSON)</a>${s.devChain ? html` <a href="/guide/local-chain">Buy on the local chain</a>` : ''}</nav>
</footer>
</body>
</html>
`
}
