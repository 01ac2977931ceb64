// The "Enrol a device" page: the owner's browser wallet (EIP-1193) registers an agent if needed,
// approves the device as operator and sets it as the agent's wallet with the signature the
// device made (`svc chain enrol --print-signature`). The same steps as `svc chain enrol`.
import { connect, ensureChain, expectedChain, say, showError } from './wallet.js'
import {
  ADDRESS,
  agentIdFromReceipt,
  checkSignatureJson,
  encodeRegister,
  encodeSetAgentWallet,
  encodeSetApprovalForAll,
} from './enrol-calldata.js'

const root = document.getElementById('enrol')
const identityRegistry = root?.dataset.identityRegistry ?? ''
const out = document.getElementById('enrol-status')

async function sendAndWait(eth, from, data, what) {
  const hash = await eth.request({
    method: 'eth_sendTransaction',
    params: [{ from, to: identityRegistry, data }],
  })
  say(out, `${what}: sent ${hash}, waiting for it to be mined…`)
  for (;;) {
    const receipt = await eth.request({ method: 'eth_getTransactionReceipt', params: [hash] })
    if (receipt) {
      if (receipt.status !== '0x1') throw new Error(`${what}: transaction ${hash} reverted`)
      return receipt
    }
    await new Promise((r) => setTimeout(r, 1000))
  }
}

async function wallet() {
  const w = await connect()
  await ensureChain(w.eth)
  return w
}

document.getElementById('enrol-register')?.addEventListener('click', async () => {
  try {
    const { eth, address } = await wallet()
    const receipt = await sendAndWait(eth, address, encodeRegister(), 'register')
    const id = agentIdFromReceipt(receipt, identityRegistry)
    say(
      out,
      id === null
        ? 'Registered, but the agent id was not in the receipt.'
        : `Registered agent ${id}. On the device run: svc chain enrol --print-signature --agent-id ${id} --owner ${address} --json`,
      'ok',
    )
  } catch (err) {
    showError(out, err)
  }
})

document.getElementById('enrol-form')?.addEventListener('submit', async (ev) => {
  ev.preventDefault()
  try {
    const { eth, address } = await wallet()
    const text = document.getElementById('enrol-signature').value
    const c = checkSignatureJson(text, { chainId: expectedChain, identityRegistry, owner: address })
    if (!c.ok) return say(out, c.error, 'error')
    const s = c.value
    if (!ADDRESS.test(s.newWallet)) return say(out, 'newWallet: must be an address.', 'error')
    await sendAndWait(eth, address, encodeSetApprovalForAll(s.newWallet), 'setApprovalForAll')
    await sendAndWait(
      eth,
      address,
      encodeSetAgentWallet(s.agentId, s.newWallet, s.deadline, s.signature),
      'setAgentWallet',
    )
    say(
      out,
      `Device ${s.newWallet} is now agent ${s.agentId}'s operator and wallet. On the device, finish with: svc chain enrol --agent-id ${s.agentId} (its steps are skipped) to write the chain file.`,
      'ok',
    )
  } catch (err) {
    showError(out, err)
  }
})
