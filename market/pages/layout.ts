// The page shell every page shares: header with navigation and the wallet sign-in control,
// a main landmark, and the page's own scripts. No external fonts, CDNs or network assets.
import { type Html, html } from './html.ts'

export interface Shell {
  title: string
  displayName: string
  chainId: number
  /** Signed-in account (checksummed) or null. */
  account: string | null
  nav: 'browse' | 'keys' | 'none'
  main: Html
  /** Module scripts under /assets/ to load besides the sign-in control. */
  scripts?: string[]
}

const short = (a: string): string => `${a.slice(0, 6)}…${a.slice(-4)}`

export function page(s: Shell): Html {
  const navLink = (href: string, label: string, key: Shell['nav']) =>
    html`<a href="${href}"${s.nav === key ? html` aria-current="page"` : ''}>${label}</a>`
  const scripts = ['session.js', ...(s.scripts ?? [])]
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${s.title} · ${s.displayName} marketplace</title>
<link rel="stylesheet" href="/assets/site.css">
${scripts.map((f) => html`<script type="module" src="/assets/${f}"></script>\n`)}
</head>
<body data-chain-id="${s.chainId}" data-display-name="${s.displayName}" data-account="${s.account ?? ''}">
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/marketplace">${s.displayName} marketplace</a>
  <nav aria-label="Main">${navLink('/marketplace', 'Browse', 'browse')} ${navLink('/keys', 'Machine keys', 'keys')}</nav>
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
<footer class="foot">Records are attested on chain ${s.chainId}. A passing row proves the device key signed that line, not that the physical action happened.</footer>
</body>
</html>
`
}
