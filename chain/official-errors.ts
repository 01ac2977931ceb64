// The custom errors of the official ERC-8004 reference registries (erc-8004/erc-8004-contracts,
// v2.0.0, built on OpenZeppelin 5.4): copied from their published ABIs
// (test/fixtures/erc8004-official/abis-*.json; test/chain/official-errors.test.ts checks the copy).
// A revert such as ERC721NonexistentToken carries only a 4-byte selector and its arguments; with
// these, svc names it instead of printing "execution reverted".
import { BaseError, ContractFunctionRevertedError, type Hex, decodeErrorResult } from 'viem'

export const officialErrorsAbi = [
  { type: 'error', name: 'AddressEmptyCode', inputs: [{ name: 'target', type: 'address' }] },
  { type: 'error', name: 'ECDSAInvalidSignature', inputs: [] },
  { type: 'error', name: 'ECDSAInvalidSignatureLength', inputs: [{ name: 'length', type: 'uint256' }] },
  { type: 'error', name: 'ECDSAInvalidSignatureS', inputs: [{ name: 's', type: 'bytes32' }] },
  {
    type: 'error',
    name: 'ERC1967InvalidImplementation',
    inputs: [{ name: 'implementation', type: 'address' }],
  },
  { type: 'error', name: 'ERC1967NonPayable', inputs: [] },
  {
    type: 'error',
    name: 'ERC721IncorrectOwner',
    inputs: [
      { name: 'sender', type: 'address' },
      { name: 'tokenId', type: 'uint256' },
      { name: 'owner', type: 'address' },
    ],
  },
  {
    type: 'error',
    name: 'ERC721InsufficientApproval',
    inputs: [
      { name: 'operator', type: 'address' },
      { name: 'tokenId', type: 'uint256' },
    ],
  },
  { type: 'error', name: 'ERC721InvalidApprover', inputs: [{ name: 'approver', type: 'address' }] },
  { type: 'error', name: 'ERC721InvalidOperator', inputs: [{ name: 'operator', type: 'address' }] },
  { type: 'error', name: 'ERC721InvalidOwner', inputs: [{ name: 'owner', type: 'address' }] },
  { type: 'error', name: 'ERC721InvalidReceiver', inputs: [{ name: 'receiver', type: 'address' }] },
  { type: 'error', name: 'ERC721InvalidSender', inputs: [{ name: 'sender', type: 'address' }] },
  { type: 'error', name: 'ERC721NonexistentToken', inputs: [{ name: 'tokenId', type: 'uint256' }] },
  { type: 'error', name: 'FailedCall', inputs: [] },
  { type: 'error', name: 'InvalidInitialization', inputs: [] },
  { type: 'error', name: 'NotInitializing', inputs: [] },
  { type: 'error', name: 'OwnableInvalidOwner', inputs: [{ name: 'owner', type: 'address' }] },
  { type: 'error', name: 'OwnableUnauthorizedAccount', inputs: [{ name: 'account', type: 'address' }] },
  { type: 'error', name: 'UUPSUnauthorizedCallContext', inputs: [] },
  { type: 'error', name: 'UUPSUnsupportedProxiableUUID', inputs: [{ name: 'slot', type: 'bytes32' }] },
] as const

/** A call's revert data as its reason: a require's string as is, else revertText's phrase. */
export function reasonText(data: Hex | undefined): string {
  try {
    if (data && data !== '0x') {
      const d = decodeErrorResult({ abi: [], data })
      if (d.errorName === 'Error') return String(d.args?.[0])
    }
  } catch {
    // not Error(string): below
  }
  return revertText(data)
}

/** A revert as one phrase: its reason string, an official error by name with its arguments, or the raw selector. */
export function revertText(data: Hex | undefined): string {
  if (!data || data === '0x') return 'reverted without a reason'
  try {
    const d = decodeErrorResult({ abi: officialErrorsAbi, data })
    return `${d.errorName}(${(d.args ?? []).map(String).join(', ')})`
  } catch {
    return `reverted with unknown error data ${data.slice(0, 10)}`
  }
}

/**
 * What a failed contract call says: `{ revert }` when the contract reverted (reason or named
 * error), `{ unreachable }` when the call never got an answer (RPC down, timeout, bad URL).
 */
export function describeCallError(err: unknown): { revert: string } | { unreachable: string } {
  if (err instanceof BaseError) {
    const rev = err.walk((e) => e instanceof ContractFunctionRevertedError)
    if (rev instanceof ContractFunctionRevertedError) {
      const bare = rev.raw === undefined || rev.raw === '0x'
      // viem fills `reason` with the node's message when the revert carried no data at all.
      if (bare && (rev.reason === undefined || rev.reason === 'execution reverted'))
        return { revert: 'reverted without a reason' }
      if (rev.reason !== undefined) return { revert: rev.reason }
      if (rev.data?.errorName)
        return { revert: `${rev.data.errorName}(${(rev.data.args ?? []).map(String).join(', ')})` }
      return { revert: revertText(rev.raw) }
    }
    // A call to an address with no code (or a function the contract lacks) "returns" zero bytes.
    if (err.walk((e) => (e as { name?: string }).name === 'ContractFunctionZeroDataError'))
      return { revert: 'returned no data (no such function there)' }
    return { unreachable: err.shortMessage }
  }
  return { unreachable: String(err) }
}
