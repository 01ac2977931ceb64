// The personal messages wallets sign, built by the server byte for byte (DESIGN: signatures).
// Lines are joined with "\n" and there is no trailing newline.

/** marketplace-api: Challenge, the six lines of a key-issue challenge, in order. */
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

/** marketplace-api: purchase, the four lines a buyer signs. */
export function unlockMessage(displayName: string, slug: string, txHash: string): string {
  return [`${displayName} marketplace`, 'Unlock', `listing: ${slug}`, `tx: ${txHash}`].join('\n')
}
