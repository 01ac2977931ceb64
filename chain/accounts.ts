// Anvil's well-known development keys (mnemonic "test test … junk", accounts 0–5), and which
// role each plays on a dev chain. Public knowledge: never use them on a real network.
import type { Address, Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

export interface KeyPair {
  address: Address
  privateKey: Hex
}

export const ROLES = ['deployer', 'owner', 'device', 'attestor', 'buyer', 'payout'] as const
export type Role = (typeof ROLES)[number]
export type DevAccounts = Record<Role, KeyPair>

export const ANVIL_KEYS: readonly Hex[] = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
  '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e',
  '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356',
  '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97',
  '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6',
]

export function keyPair(privateKey: Hex): KeyPair {
  return { address: privateKeyToAccount(privateKey).address, privateKey }
}

/** Account i of anvil's default mnemonic (0–9). */
export function anvilAccount(i: number): KeyPair {
  const k = ANVIL_KEYS[i]
  if (k === undefined) throw new Error(`anvil account ${i} does not exist (0-${ANVIL_KEYS.length - 1})`)
  return keyPair(k)
}

/** deployer = 0, owner = 1, device = 2, attestor = 3, buyer = 4, payout = 5. */
export function devAccounts(): DevAccounts {
  const out = {} as DevAccounts
  ROLES.forEach((role, i) => {
    out[role] = anvilAccount(i)
  })
  return out
}
