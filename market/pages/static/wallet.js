// Wallet steps shared by the pages: an EIP-1193 provider (window.ethereum), the chain check,
// Sign-In with Ethereum (EIP-4361) and plain messages for every way a wallet can say no.
const body = document.body
export const expectedChain = Number(body.dataset.chainId)

export class WalletError extends Error {}
export class WrongChain extends Error {
  constructor(actual) {
    super(`Your wallet is on chain ${actual}; switch to chain ${expectedChain}.`)
    this.actual = actual
  }
}
export class ApiError extends Error {
  constructor(status, message) {
    super(message)
    this.status = status
  }
}

export function provider() {
  const eth = window.ethereum
  if (!eth || typeof eth.request !== 'function')
    throw new WalletError(
      'No wallet found. To sign in, install a browser wallet (EIP-1193). Browsing and verifying need no wallet.',
    )
  return eth
}

/** The connected account: asks the wallet to connect when needed. */
export async function connect() {
  const eth = provider()
  const accounts = await eth.request({ method: 'eth_requestAccounts' })
  if (!Array.isArray(accounts) || typeof accounts[0] !== 'string')
    throw new WalletError('Your wallet shared no account with this site.')
  return { eth, address: accounts[0] }
}

export async function ensureChain(eth) {
  const raw = await eth.request({ method: 'eth_chainId' })
  const id = typeof raw === 'number' ? raw : Number.parseInt(String(raw), 16)
  if (id !== expectedChain) throw new WrongChain(Number.isNaN(id) ? String(raw) : id)
}

export function utf8Hex(s) {
  return '0x' + Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, '0')).join('')
}

export async function personalSign(eth, address, message) {
  return eth.request({ method: 'personal_sign', params: [utf8Hex(message), address] })
}

export async function api(path, { method = 'GET', json } = {}) {
  const init = { method, credentials: 'same-origin', headers: {} }
  if (json !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(json)
  }
  let res
  try {
    res = await fetch(path, init)
  } catch {
    throw new ApiError(0, 'The market could not be reached. Check your connection and try again.')
  }
  let data = {}
  try {
    data = await res.json()
  } catch {
    // a body that is not JSON: the status says enough
  }
  if (!res.ok) throw new ApiError(res.status, data.error || `The market answered ${res.status}.`)
  return data
}

/** Sign in: connect, check the chain, sign a fresh SIWE message. Returns the signed-in address. */
export async function signIn(say) {
  const { eth, address } = await connect()
  await ensureChain(eth)
  const { nonce } = await api('/api/auth/nonce')
  // The server builds the EIP-4361 text (checksummed address, its own host and chain).
  const q = new URLSearchParams({ address, nonce })
  const { message } = await api(`/auth/siwe-message?${q}`)
  say('Sign the sign-in message in your wallet…')
  const signature = await personalSign(eth, address, message)
  const s = await api('/api/auth/verify', { method: 'POST', json: { message, signature } })
  body.dataset.account = s.address
  document.dispatchEvent(new CustomEvent('svc:signed-in', { detail: s.address }))
  return s.address
}

/** A sentence for a failure, whatever threw it. */
export function explain(err) {
  if (err instanceof WalletError || err instanceof WrongChain) return err.message
  if (err instanceof ApiError) return err.message
  const code = err && typeof err === 'object' ? err.code : undefined
  if (code === 4001) return 'You rejected the request in your wallet; nothing was signed or sent.'
  if (code === 4100)
    return 'Your wallet has not authorised this site. Connect this site in your wallet and try again.'
  if (code === 4900 || code === 4901)
    return 'Your wallet is not connected to a chain. Reconnect it and try again.'
  if (code === -32002) return 'Your wallet already has a request waiting. Open the wallet and answer it.'
  const msg = err && typeof err === 'object' && typeof err.message === 'string' ? err.message : String(err)
  return `Your wallet reported an error: ${msg}`
}

export function say(el, text, kind = 'info') {
  el.replaceChildren()
  el.hidden = false
  const p = document.createElement('p')
  p.className = kind
  p.textContent = text
  el.append(p)
  return p
}

/** Show a failure in `el`; a wrong chain gets a button that asks the wallet to switch. */
export function showError(el, err) {
  const p = say(el, explain(err), 'error')
  if (err instanceof WrongChain) {
    const b = document.createElement('button')
    b.type = 'button'
    b.textContent = `Switch wallet to chain ${expectedChain}`
    b.addEventListener('click', async () => {
      try {
        await provider().request({
          method: 'wallet_switchEthereumChain',
          params: [{ chainId: '0x' + expectedChain.toString(16) }],
        })
        say(el, `Your wallet is now on chain ${expectedChain}. Try again.`, 'ok')
      } catch (e) {
        if (e && e.code === 4902)
          say(
            el,
            `Your wallet does not know chain ${expectedChain}; add it in your wallet, then try again.`,
            'error',
          )
        else showError(el, e)
      }
    })
    p.append(' ', b)
  }
  return p
}
