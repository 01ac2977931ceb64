// The header's sign-in and sign-out buttons.
import { api, showError, signIn, say } from './wallet.js'

const status = document.getElementById('session-status')
const inBtn = document.getElementById('sign-in')

inBtn?.addEventListener('click', async () => {
  inBtn.disabled = true
  try {
    await signIn((m) => say(status, m))
    say(status, 'Signed in.', 'ok')
    location.reload()
  } catch (err) {
    showError(status, err)
  } finally {
    inBtn.disabled = false
  }
})

// A page's own "Sign in with wallet" button (keys, purchases) does what the header's does.
for (const b of document.querySelectorAll('button.sign-in-here'))
  b.addEventListener('click', () => inBtn?.click())

function bindSignOut(outBtn) {
  outBtn?.addEventListener('click', async () => {
    outBtn.disabled = true
    try {
      await api('/api/auth/signout', { method: 'POST' })
      location.reload()
    } catch (err) {
      showError(status, err)
      outBtn.disabled = false
    }
  })
}
bindSignOut(document.getElementById('sign-out'))

// Signed in by another step (e.g. Buy) without a reload: show it in the header too.
document.addEventListener('svc:signed-in', (e) => {
  const box = document.getElementById('session')
  if (!box || document.getElementById('sign-out')) return
  const address = String(e.detail)
  const who = document.createElement('span')
  who.className = 'who'
  const code = document.createElement('code')
  code.title = address
  code.textContent = `${address.slice(0, 6)}…${address.slice(-4)}`
  who.append('Signed in as ', code)
  const out = document.createElement('button')
  out.type = 'button'
  out.id = 'sign-out'
  out.textContent = 'Sign out'
  box.replaceChildren(who, ' ', out)
  bindSignOut(out)
})
