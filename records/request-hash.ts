// How a line's requestHash is derived (chain/README.md, "How `requestHash` is derived").
//
// requestHash = keccak256(abi.encode(string "svc.request.v1", uint256 chainId, bytes32 storeId,
//                                    uint64 seq, bytes32 paramsHash))
//
// storeId is 32 random bytes made when the attestation store is created; seq is the line's
// 0-based position in that store. So the hash is fixed the moment the line is stored (offline,
// before any chain is reachable), is the same after any restart, and differs for two equal
// lines: the registry's request hashes are first-come, and a listing may not repeat one.
import { type Hex, encodeAbiParameters, keccak256 } from 'viem'

export interface RequestHashInput {
  chainId: number
  storeId: Hex
  seq: number
  paramsHash: Hex
}

const PARAMS = [
  { type: 'string' },
  { type: 'uint256' },
  { type: 'bytes32' },
  { type: 'uint64' },
  { type: 'bytes32' },
] as const

export function requestHashFor(i: RequestHashInput): Hex {
  return keccak256(
    encodeAbiParameters(PARAMS, [
      'svc.request.v1',
      BigInt(i.chainId),
      i.storeId,
      BigInt(i.seq),
      i.paramsHash,
    ]),
  )
}
