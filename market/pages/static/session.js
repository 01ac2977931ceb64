// The header's sign-in and sign-out buttons.
import { api, showError, signIn, say } from './wallet.js'

const status = document.getElementById('session-status')
const inBtn = document.getElementById('sign-in')
const outBtn = document.getElementById('sign-out')

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
