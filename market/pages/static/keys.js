// The machine-keys page: sign a key challenge, show the new key once with a copy button and the
// command to store it on the device, refresh the list, revoke a key. Values from the API are set
// as text.
import { api, connect, ensureChain, personalSign, say, showError } from './wallet.js'

function revokeButton(k) {
  const b = document.createElement('button')
  b.type = 'button'
  b.className = 'revoke secondary'
  b.dataset.id = k.id
  b.textContent = 'Revoke'
  b.setAttribute('aria-label', `Revoke key svc_${k.prefix}…`)
  return b
}

const form = document.getElementById('issue-form')
if (form) {
  const status = document.getElementById('issue-status')
  const box = document.getElementById('new-key')
  const value = document.getElementById('new-key-value')
  const copyStatus = document.getElementById('copy-status')
  const btn = document.getElementById('issue-button')

  async function refresh() {
    const { keys } = await api('/api/marketplace/keys')
    const tbody = document.getElementById('key-rows')
    tbody.replaceChildren()
    if (keys.length === 0) {
      const tr = document.createElement('tr')
      const td = document.createElement('td')
      td.colSpan = 7
      td.textContent = 'No keys yet.'
      tr.append(td)
      tbody.append(tr)
    }
    for (const k of keys) {
      const tr = document.createElement('tr')
      const cells = [
        `svc_${k.prefix}…`,
        k.agentId,
        k.wallet,
        k.device ?? '—',
        k.createdAt.replace('T', ' ').slice(0, 19),
        k.status + (k.revokedReason ? `: ${k.revokedReason}` : ''),
      ]
      cells.forEach((c, i) => {
        const td = document.createElement('td')
        if (i === 0 || i === 2 || (i === 3 && k.device)) {
          const code = document.createElement('code')
          code.textContent = c
          td.append(code)
        } else td.textContent = c
        tr.append(td)
      })
      const act = document.createElement('td')
      if (k.status === 'active') act.append(revokeButton(k))
      tr.append(act)
      tbody.append(tr)
    }
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    const agentId = String(new FormData(form).get('agentId') ?? '').trim()
    if (!/^[0-9]{1,78}$/.test(agentId)) {
      say(status, 'Agent id: enter the agent number, a whole number like 0.', 'error')
      return
    }
    btn.disabled = true
    box.hidden = true
    value.value = ''
    try {
      const { eth, address } = await connect()
      await ensureChain(eth)
      const ch = await api('/api/marketplace/challenges', {
        method: 'POST',
        json: { kind: 'key', agentId, wallet: address },
      })
      say(status, 'Sign the key challenge in your wallet…')
      const signature = await personalSign(eth, address, ch.message)
      const k = await api('/api/marketplace/keys', {
        method: 'POST',
        json: { challengeId: ch.id, signature },
      })
      value.value = k.key
      const origin = document.getElementById('issue')?.dataset.origin ?? location.origin
      document.getElementById('key-command').textContent = `npx svc key set ${k.key} --market ${origin}`
      box.hidden = false
      copyStatus.textContent = ''
      say(
        status,
        `Key svc_${k.prefix}… issued for agent ${k.agentId}${k.device ? ` (device ${k.device})` : ''}. Copy it now: it will not be shown again.`,
        'ok',
      )
      value.focus()
      value.select()
      await refresh()
    } catch (err) {
      showError(status, err)
    } finally {
      btn.disabled = false
    }
  })

  // Revoke: one key, after a confirmation; the list is read again from the market.
  const revokeStatus = document.getElementById('revoke-status')
  document.getElementById('key-rows').addEventListener('click', async (e) => {
    const b = e.target.closest('button.revoke')
    if (!b) return
    const label = b.getAttribute('aria-label')?.replace(/^Revoke key /, '') ?? 'this key'
    if (!window.confirm(`Revoke ${label}? A device using it can no longer list.`)) return
    b.disabled = true
    try {
      await api(`/api/marketplace/keys/${encodeURIComponent(b.dataset.id)}`, { method: 'DELETE' })
      say(revokeStatus, `Key ${label} revoked: it can no longer list.`, 'ok')
      await refresh()
    } catch (err) {
      showError(revokeStatus, err)
      b.disabled = false
    }
  })

  document.getElementById('copy-key').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value.value)
      copyStatus.textContent = 'Copied to the clipboard.'
    } catch {
      value.focus()
      value.select()
      copyStatus.textContent =
        'Your browser blocked copying: the key is selected, press Ctrl+C (⌘C) to copy it.'
    }
  })
}
