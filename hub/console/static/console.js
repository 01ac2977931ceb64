// The console's one script (same origin, loaded as a module under a strict CSP).
// 1. Sign-in by link: /login#token=… posts the token (never sent in a URL) and goes on.
// 2. Live updates: elements with an id and data-live="topic …" are refreshed from a refetch of
//    this page when the server-sent event stream (/events) announces one of their topics; at most
//    one refetch a second, however many events arrive.

const status = document.getElementById('live-status')
const say = (text) => {
  if (!status) return
  status.textContent = text
  status.hidden = text === ''
}

async function linkSignIn() {
  if (location.pathname !== '/login' || !location.hash.startsWith('#token=')) return
  const token = decodeURIComponent(location.hash.slice('#token='.length))
  // Out of the address bar and history at once.
  history.replaceState(null, '', location.pathname + location.search)
  const out = document.getElementById('link-status')
  if (out) {
    out.hidden = false
    out.textContent = 'Signing in with the link…'
  }
  const res = await fetch('/login/link', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
    credentials: 'same-origin',
  })
  if (res.ok) {
    const next = new URLSearchParams(location.search).get('next') || '/'
    location.replace(next.startsWith('/') && !next.startsWith('//') ? next : '/')
    return
  }
  const body = await res.json().catch(() => ({}))
  if (out) {
    out.className = 'error'
    out.textContent = body.error || `sign-in failed (${res.status})`
  }
}

const MIN_GAP_MS = 1000

function live() {
  const regions = [...document.querySelectorAll('[data-live][id]')]
  if (regions.length === 0 || typeof EventSource === 'undefined') return
  const topics = new Set(regions.flatMap((r) => r.dataset.live.split(/\s+/).filter(Boolean)))
  const dirty = new Set()
  let last = 0
  let timer = null
  let busy = false

  async function refresh() {
    timer = null
    if (busy) return schedule()
    busy = true
    last = Date.now()
    const ids = [...dirty]
    dirty.clear()
    try {
      const res = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' })
      if (res.redirected || !res.ok) return say('Signed out or page gone: reload the page.')
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html')
      for (const id of ids) {
        const now = document.getElementById(id)
        const next = doc.getElementById(id)
        // A region holding the focus (a comment being typed) is left alone until it is let go.
        if (now && next && !now.contains(document.activeElement)) now.innerHTML = next.innerHTML
        else if (now && next) dirty.add(id)
      }
      document.dispatchEvent(new CustomEvent('console:updated'))
    } catch {
      for (const id of ids) dirty.add(id)
    } finally {
      busy = false
      if (dirty.size > 0) schedule()
    }
  }
  function schedule() {
    if (timer !== null) return
    timer = setTimeout(refresh, Math.max(0, last + MIN_GAP_MS - Date.now()))
  }

  const es = new EventSource(`/events?topics=${[...topics].join(',')}`)
  for (const t of topics)
    es.addEventListener(t, () => {
      for (const r of regions) if (r.dataset.live.split(/\s+/).includes(t)) dirty.add(r.id)
      schedule()
    })
  let lost = false
  es.addEventListener('open', () => {
    document.body.dataset.live = 'open'
    say('')
    // Events sent while the stream was down are gone: refetch every live region once.
    if (lost) {
      for (const r of regions) dirty.add(r.id)
      schedule()
    }
    lost = false
  })
  es.addEventListener('error', () => {
    lost = true
    document.body.dataset.live = 'reconnecting'
    say('Live updates paused: reconnecting…')
  })
}

linkSignIn()
// A link opened on the sign-in page already open changes only the fragment: no new page load.
window.addEventListener('hashchange', linkSignIn)
live()
