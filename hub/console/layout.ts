// The console's page shell: header with the navigation and sign-out, a main landmark, one
// same-origin script (live updates). Nothing from another origin: the CSP (app.ts) forbids it.
import { type Html, html } from '../../web/html.ts'

export interface NavItem {
  key: string
  href: string
  label: string
}

export interface Shell {
  title: string
  /** The NAV key of the current page ('none' for pages outside the navigation). */
  nav: string
  body: Html
  navItems: readonly NavItem[]
  /** The session's CSRF token, or null on pages shown signed out (sign-in, errors). */
  csrf: string | null
}

export function layout(s: Shell): Html {
  const link = (n: NavItem) =>
    html`<a href="${n.href}"${s.nav === n.key ? html` aria-current="page"` : ''}>${n.label}</a>`
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${s.title} · svc hub</title>
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/console.css">
<script type="module" src="/assets/console.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/">svc hub</a>
  ${
    s.csrf !== null
      ? html`<nav aria-label="Main">${s.navItems.map((n) => html`${link(n)} `)}</nav>
  <form method="post" action="/logout" class="signout"><input type="hidden" name="_csrf" value="${s.csrf}"><button type="submit" class="secondary">Sign out</button></form>`
      : ''
  }
</header>
<p class="live-status" id="live-status" role="status" aria-live="polite" hidden></p>
<main id="main">
${s.body}
</main>
</body>
</html>
`
}
