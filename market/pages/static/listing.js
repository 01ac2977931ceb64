// The listing page: Verify (anyone) and Buy (pay from the wallet, sign the unlock message,
// download). Everything shown comes from the API and is set as text, never as markup.
import {
  ApiError,
  WalletError,
  api,
  connect,
  ensureChain,
  personalSign,
  say,
  showError,
  signIn,
} from './wallet.js'

const el = (tag, text, cls) => {
  const e = document.createElement(tag)
  if (text !== undefined) e.textContent = text
  if (cls) e.className = cls
  return e
}
const short = (h) => (typeof h === 'string' && h.length > 14 ? `${h.slice(0, 10)}…${h.slice(-4)}` : String(h))

function rowsTable(caption, rows, withResult) {
  const t = el('table', undefined, 'rows')
  t.append(el('caption', caption))
  const head = el('tr')
  // The result before the hashes: on a phone it is what shows without scrolling the table.
  for (const h of ['Row', ...(withResult ? ['Result'] : []), 'paramsHash', 'requestHash']) {
    const th = el('th', h)
    th.scope = 'col'
    head.append(th)
  }
  t.append(el('thead'))
  t.tHead.append(head)
  const tb = el('tbody')
  for (const r of rows) {
    const tr = el('tr')
    const a = el('td', String(r.index + 1))
    const p = el('td')
    p.append(el('code', short(r.paramsHash)))
    p.title = r.paramsHash
    const q = el('td')
    q.append(el('code', short(r.requestHash)))
    q.title = r.requestHash
    tr.append(a)
    if (withResult)
      tr.append(
        el('td', r.pass ? 'Passed' : `Failed: ${r.reason ?? 'no reason given'}`, r.pass ? 'ok' : 'bad'),
      )
    tr.append(p, q)
    tb.append(tr)
  }
  t.append(tb)
  // A phone scrolls the table inside its box, never the page.
  const box = el('div', undefined, 'scroll')
  box.append(t)
  return box
}

// The preview's sample lines are the first rows: each shows its own verdict from this check.
function showSampleVerdicts(rows) {
  for (const r of rows) {
    const span = document.getElementById(`sample-verdict-${r.index}`)
    if (!span) continue
    span.className = r.pass ? 'ok' : 'bad'
    span.textContent = r.pass ? 'Passed just now.' : `Failed just now: ${r.reason ?? 'no reason given'}`
  }
}

const verify = document.getElementById('verify')
const verifyBtn = document.getElementById('verify-button')
if (verify && verifyBtn) {
  const status = document.getElementById('verify-status')
  const out = document.getElementById('verify-result')
  verifyBtn.addEventListener('click', async () => {
    verifyBtn.disabled = true
    out.replaceChildren()
    say(status, 'Reading every row from the validation registry…')
    try {
      const v = await api(`/api/marketplace/listings/${verify.dataset.slug}/verify`, { method: 'POST' })
      if (v.preview) {
        say(
          status,
          `Sample listing: ${v.total} rows; none was read from the chain, so no pass or fail is claimed.`,
        )
        out.append(rowsTable(`First ${v.rows.length} of ${v.total} rows`, v.rows, false))
        return
      }
      say(
        status,
        v.failed === 0
          ? `Verified: all ${v.total} rows passed.`
          : `Not verified: ${v.passed} rows passed, ${v.failed} failed (of ${v.total}).`,
        v.failed === 0 ? 'ok' : 'error',
      )
      showVerdict(v)
      showSampleVerdicts(v.rows)
      out.append(rowsTable(`First ${v.rows.length} of ${v.total} rows`, v.rows, true))
      if (v.failures && v.failures.length > 0)
        out.append(
          rowsTable(`First ${v.failures.length} of ${v.failed} failed rows, with reasons`, v.failures, true),
        )
    } catch (err) {
      showError(status, err)
    } finally {
      verifyBtn.disabled = false
    }
  })
}

// The verdict just stored replaces the one the page was rendered with: the line under the title,
// and for a failure the warning the buyer must tick before paying (the purchase route's rule).
function showVerdict(v) {
  const line = document.querySelector('p.verification')
  if (!line) return
  const ok = v.failed === 0
  line.className = ok ? 'verification' : 'verification failed'
  line.replaceChildren(
    el('span', ok ? 'verified' : 'verification failed', `tag v-${ok ? 'verified' : 'failed'}`),
    ' ',
    ok ? 'Every row passed just now.' : `Just now ${v.failed} of ${v.total} rows did not verify.`,
  )
  const buyBtn = document.getElementById('buy-button')
  const box = document.getElementById('accept-unverified')
  if (!ok && buyBtn && !box) {
    const warn = el(
      'p',
      'The last verification of these rows failed (see above): what you would buy is not what the chain attests.',
      'warn',
    )
    const label = el('label', undefined, 'accept')
    const input = document.createElement('input')
    input.type = 'checkbox'
    input.id = 'accept-unverified'
    label.append(input, ' I have read this and want to buy it anyway')
    buyBtn.before(warn, label)
  }
  if (ok && box) {
    box.closest('label')?.previousElementSibling?.remove()
    box.closest('label')?.remove()
  }
}

async function waitReceipt(eth, tx) {
  for (let i = 0; i < 120; i++) {
    const r = await eth.request({ method: 'eth_getTransactionReceipt', params: [tx] })
    if (r) {
      if (r.status === '0x0' || r.status === 0)
        throw new WalletError(`The payment ${tx} failed on chain (reverted); nothing was paid.`)
      return
    }
    await new Promise((res) => setTimeout(res, 1000))
  }
  throw new WalletError(
    `The payment ${tx} is not confirmed yet. Press Buy again once it is; you will not pay twice.`,
  )
}

function showAccess(out, access, tx) {
  out.replaceChildren()
  const receipt = el('p', undefined, 'receipt')
  const a = el('a', 'My purchases')
  a.href = '/purchases'
  receipt.append('Receipt: transaction ', el('code', tx), '. All your receipts: ', a, '.')
  out.append(receipt)
  const ul = el('ul', undefined, 'downloads')
  for (const [label, href, cid] of [
    ['Download data', access.dataUrl, access.dataCid],
    ['Download manifest', access.manifestUrl, access.manifestCid],
  ]) {
    const li = el('li')
    const a = el('a', label)
    a.href = href
    a.download = ''
    li.append(a, ' ', el('small', `CID ${cid}`))
    ul.append(li)
  }
  out.append(ul)
}

const buy = document.getElementById('buy')
const buyBtn = document.getElementById('buy-button')
if (buy && buyBtn) {
  const status = document.getElementById('buy-status')
  const out = document.getElementById('buy-result')
  const slug = buy.dataset.slug
  // A sent payment is kept until it unlocks, so a rejected signature never means paying twice.
  const txKey = `svc-payment:${slug}`
  buyBtn.addEventListener('click', async () => {
    // Shown only when the listing's last verification failed: nothing is paid until it is ticked.
    const accept = document.getElementById('accept-unverified')
    if (accept && !accept.checked) {
      say(status, 'The rows of this listing did not verify: tick the box above to buy it anyway.')
      accept.focus()
      return
    }
    buyBtn.disabled = true
    try {
      let account = document.body.dataset.account
      if (!account) account = await signIn((m) => say(status, m))
      const { eth, address } = await connect()
      if (address.toLowerCase() !== account.toLowerCase())
        throw new WalletError(
          `Your wallet's account ${address} is not the signed-in account ${account}. Switch account in your wallet, or sign out and sign in again.`,
        )
      await ensureChain(eth)
      let tx = sessionStorage.getItem(txKey)
      if (!tx) {
        say(status, `Confirm the payment of ${buy.dataset.price} in your wallet…`)
        tx = await eth.request({
          method: 'eth_sendTransaction',
          params: [
            {
              from: address,
              to: buy.dataset.payout,
              value: '0x' + BigInt(buy.dataset.priceWei).toString(16),
            },
          ],
        })
        sessionStorage.setItem(txKey, tx)
      }
      say(status, `Payment sent (${tx}); waiting for it to be confirmed…`)
      await waitReceipt(eth, tx)
      say(status, 'Payment confirmed. Sign the unlock message in your wallet…')
      const { message } = await api(`/auth/unlock-message?${new URLSearchParams({ slug, tx })}`)
      const signature = await personalSign(eth, address, message)
      const r = await api(`/api/marketplace/listings/${slug}/purchase`, {
        method: 'POST',
        json: { txHash: tx, signature, ...(accept?.checked ? { acceptUnverified: true } : {}) },
      })
      sessionStorage.removeItem(txKey)
      say(status, 'Unlocked. Download the data and the manifest below.', 'ok')
      showAccess(out, r.access, tx)
      buyBtn.hidden = true
    } catch (err) {
      // A payment the market refused for good is forgotten; one that may still unlock is kept.
      if (
        err instanceof ApiError &&
        (err.status === 402 || (err.status === 409 && /already used/.test(err.message)))
      )
        sessionStorage.removeItem(txKey)
      const p = showError(status, err)
      const kept = sessionStorage.getItem(txKey)
      if (kept)
        p.append(
          ' ',
          el(
            'span',
            `Your payment ${kept} is kept: press Buy again to unlock with it; you will not pay twice.`,
          ),
        )
    } finally {
      buyBtn.disabled = false
    }
  })
}
