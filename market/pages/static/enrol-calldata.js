// Calldata for the "Enrol a device" page, built here so the page needs no library from another
// origin: ERC-8004 IdentityRegistry register(), ERC-721 setApprovalForAll(device, true) and
// setAgentWallet(agentId, device, deadline, signature) in the Solidity ABI encoding, and the
// checks on the JSON `svc chain enrol --print-signature --json` prints. Pure: no DOM, no wallet
// (test/web/enrol.test.ts checks every encoding against viem's).
const SELECTORS = {
  register: '0x1aa3a008', // register()
  setApprovalForAll: '0xa22cb465', // setApprovalForAll(address,bool)
  setAgentWallet: '0x2d1ef5ae', // setAgentWallet(uint256,address,uint256,bytes)
}
/** keccak256("Transfer(address,address,uint256)"): the mint that register() emits. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
export const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const UINT = /^(0|[1-9][0-9]{0,77})$/

const word = (hex) => hex.padStart(64, '0')
const uint = (dec) => word(BigInt(dec).toString(16))
const addr = (a) => word(a.slice(2).toLowerCase())

export function encodeRegister() {
  return SELECTORS.register
}

export function encodeSetApprovalForAll(operator) {
  if (!ADDRESS.test(operator)) throw new Error(`not an address: ${operator}`)
  return SELECTORS.setApprovalForAll + addr(operator) + uint(1)
}

export function encodeSetAgentWallet(agentId, wallet, deadline, signature) {
  if (!ADDRESS.test(wallet)) throw new Error(`not an address: ${wallet}`)
  if (!/^0x([0-9a-fA-F]{2})*$/.test(signature)) throw new Error('the signature is not hex')
  const bytes = signature.slice(2).toLowerCase()
  const len = bytes.length / 2
  const padded = bytes.padEnd(Math.ceil(bytes.length / 64) * 64, '0')
  // Head: agentId, wallet, deadline, then the offset of the dynamic bytes (4 words = 0x80).
  return (
    SELECTORS.setAgentWallet + uint(agentId) + addr(wallet) + uint(deadline) + uint(128) + uint(len) + padded
  )
}

/** The new agent's id from register()'s receipt: the Transfer from zero that minted it. */
export function agentIdFromReceipt(receipt, identityRegistry) {
  for (const log of receipt?.logs ?? []) {
    if (String(log.address).toLowerCase() !== identityRegistry.toLowerCase()) continue
    if (log.topics?.[0] === TRANSFER_TOPIC && log.topics.length === 4 && BigInt(log.topics[1]) === 0n)
      return BigInt(log.topics[3]).toString()
  }
  return null
}

/**
 * Checks the device's signature JSON against this market's chain and the connected owner.
 * Returns { ok: true, value } or { ok: false, error } naming the field.
 */
export function checkSignatureJson(text, { chainId, identityRegistry, owner }) {
  let o
  try {
    o = JSON.parse(text)
  } catch {
    return {
      ok: false,
      error:
        'The device signature is not JSON: paste what `svc chain enrol --print-signature --json` printed.',
    }
  }
  if (!o || typeof o !== 'object') return { ok: false, error: 'The device signature must be a JSON object.' }
  if (o.chainId !== chainId)
    return { ok: false, error: `chainId: ${o.chainId}, but this market is on chain ${chainId}.` }
  if (
    typeof o.identityRegistry !== 'string' ||
    o.identityRegistry.toLowerCase() !== identityRegistry.toLowerCase()
  )
    return {
      ok: false,
      error: `identityRegistry: ${o.identityRegistry}, but this market uses ${identityRegistry}.`,
    }
  if (typeof o.agentId !== 'string' || !UINT.test(o.agentId))
    return { ok: false, error: 'agentId: must be a decimal string.' }
  if (typeof o.newWallet !== 'string' || !ADDRESS.test(o.newWallet))
    return { ok: false, error: 'newWallet: must be an address.' }
  if (typeof o.owner !== 'string' || o.owner.toLowerCase() !== String(owner).toLowerCase())
    return {
      ok: false,
      error: `owner: the device signed for ${o.owner}, but your wallet is ${owner}. Sign again with --owner ${owner}.`,
    }
  if (typeof o.deadline !== 'string' || !UINT.test(o.deadline))
    return { ok: false, error: 'deadline: must be a decimal string.' }
  if (typeof o.signature !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(o.signature))
    return { ok: false, error: 'signature: must be 65 bytes of hex.' }
  return { ok: true, value: o }
}
