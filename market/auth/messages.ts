// The personal messages wallets sign, built by the server byte for byte (market/API.md, "Signed messages").
// Lines are joined with "\n" and there is no trailing newline.

/** market/API.md, "Signed messages": the six lines of a key-issue challenge, in order. */
export function keyChallengeMessage(
  displayName: string,
  wallet: string,
  chainId: number,
  agentId: string,
  nonce: string,
): string {
  return [
    `${displayName} marketplace`,
    'Issue agent key',
    `wallet: ${wallet}`,
    `chain: ${chainId}`,
    `agent: ${agentId}`,
    `nonce: ${nonce}`,
  ].join('\n')
}

/** market/API.md, "Signed messages": the four Unlock lines a buyer signs. */
export function unlockMessage(displayName: string, slug: string, txHash: string): string {
  return [`${displayName} marketplace`, 'Unlock', `listing: ${slug}`, `tx: ${txHash}`].join('\n')
}
