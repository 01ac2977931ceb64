// The attestor: the operator's validator (<ATTESTOR_ADDRESS>). For each line a device sends it
//   1. recovers the EIP-191 signer of the line and accepts it only when it is the agent's
//      verified wallet (ERC-8004 getAgentWallet) or the agent's owner (ownerOf);
//   2. hashes the line: paramsHash = keccak256(line bytes);
//   3. finds the device's validationRequest under requestHash naming this attestor and agent;
//   4. sends validationResponse(requestHash, 100, uri, paramsHash, "svc-action").
// A request already answered with the same paramsHash is reported done without a new
// transaction, so the device may retry a batch after any crash.
import { type Failure, fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { type Address, type Hex, parseGwei } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { createCallRoute } from '../../chain/call-route.ts'
import { type SvcPublicClient, publicClientFor } from '../../chain/clients.ts'
import { readAgentWallet, readOwnerOf, readValidationStatus } from '../../chain/reads.ts'
import { createTxSender } from '../../chain/tx-sender.ts'
import { recoverLineSigner } from './recover.ts'
import { createResponseBatcher } from './response-batch.ts'
import { lineHash } from '../../records/hash.ts'
import { ATTEST_RESPONSE, ATTEST_TAG } from '../../records/verify-row.ts'
import type { AttestorConfig } from './config.ts'
import type { AttestItem, AttestRequest, ItemResult } from '../../records/attestor-request.ts'

export type AttestOutcome = { ok: true; results: ItemResult[] } | Failure<'NOT_FOUND' | 'UNREACHABLE'>

export interface Attestor {
  address: Address
  attest(req: AttestRequest): Promise<AttestOutcome>
}

const ZERO = '0x0000000000000000000000000000000000000000'

export function createAttestor(config: AttestorConfig, clients?: { pub?: SvcPublicClient }): Attestor {
  const account = privateKeyToAccount(config.privateKey)
  // Retries of one RPC call (Retry-After honoured) are viem's; see chain/clients.ts.
  const pub =
    clients?.pub ??
    publicClientFor(config.rpcUrl, { retryCount: 5, timeout: config.rpcTimeoutMs ?? 15_000, batch: true })
  const inflight = new Map<string, Promise<ItemResult>>()
  // Without an executor (a chain without EIP-7702) the same queue sends one answer per
  // transaction, straight to the registry: the same fees, replacement and Retry-After.
  const batcher = createResponseBatcher({
    pub,
    sender: createTxSender({
      pub,
      account,
      ...(config.feeCapGwei !== undefined ? { feeCapPerGas: parseGwei(String(config.feeCapGwei)) } : {}),
      stuckAfterMs: config.stuckAfterMs ?? 60_000,
      warn: (m) => config.warn?.(m),
    }),
    route: createCallRoute({
      pub,
      account: account.address,
      registry: config.validationRegistry,
      executor: config.batchExecutor,
    }),
    maxLines: 400,
    warn: (m) => config.warn?.(m),
  })

  async function one(item: AttestItem, agentId: bigint, allowed: Set<string>): Promise<ItemResult> {
    const { requestHash, line, signature } = item
    let signer: Address
    try {
      signer = await recoverLineSigner(line, signature)
    } catch {
      return { requestHash, ...fail('BAD_INPUT', 'signature: not a valid signature of the line') }
    }
    if (!allowed.has(signer.toLowerCase())) {
      return {
        requestHash,
        ...fail(
          'FORBIDDEN',
          `signature: signed by ${signer}, which is neither agent ${agentId}'s wallet nor its owner`,
        ),
      }
    }
    const paramsHash = lineHash(line)
    // A batch that did not land (reverted, nonce taken) sends its answers back here: the row
    // is read again, so an answer that did land after all is never sent twice.
    for (let round = 0; ; round++) {
      const r = await check(requestHash, paramsHash, agentId)
      if (r !== null) return r
      const out = await batcher.submit({
        requestHash,
        response: ATTEST_RESPONSE,
        uri: `${config.uriBase}/responses/${requestHash}`,
        paramsHash,
        tag: ATTEST_TAG,
      })
      if ('retry' in out) {
        if (round < 5) continue
        throw new ChainDown('the answer did not land after 5 batches')
      }
      if (!out.ok) return { requestHash, ...out }
      return { requestHash, ok: true, txHash: out.txHash, already: false }
    }
  }

  /** The row's checks: a result when there is nothing to send, null when an answer must go out. */
  async function check(requestHash: Hex, paramsHash: Hex, agentId: bigint): Promise<ItemResult | null> {
    const row = await readValidationStatus(pub, config.validationRegistry, requestHash)
    if (!row.ok) {
      if (row.code === 'NOT_FOUND')
        return {
          requestHash,
          ...fail(
            row.code,
            'requestHash: no validation request under this hash (the device sends validationRequest first)',
          ),
        }
      throw new ChainDown(row.error)
    }
    const r = row.value
    if (r.validator.toLowerCase() !== account.address.toLowerCase()) {
      return {
        requestHash,
        ...fail('BAD_INPUT', `requestHash: the request names validator ${r.validator}, not this attestor`),
      }
    }
    if (r.agentId !== agentId)
      return {
        requestHash,
        ...fail('BAD_INPUT', `requestHash: the request is for agent ${r.agentId}, not ${agentId}`),
      }
    const answered = r.tag !== '' || r.response !== 0
    if (answered) {
      if (
        r.responseHash.toLowerCase() === paramsHash &&
        r.response === ATTEST_RESPONSE &&
        r.tag === ATTEST_TAG
      ) {
        return { requestHash, ok: true, txHash: null, already: true }
      }
      return { requestHash, ...fail('CONFLICT', 'requestHash: already answered for another line') }
    }
    return null
  }

  return {
    address: account.address,
    async attest(req) {
      const owner = await readOwnerOf(pub, config.identityRegistry, req.agentId)
      if (!owner.ok) {
        if (owner.code === 'UNREACHABLE')
          return { ok: false, code: 'UNREACHABLE', error: `chain unreachable: ${owner.error}` }
        return { ok: false, code: 'NOT_FOUND', error: `agentId: agent ${req.agentId} does not exist` }
      }
      const wallet = await readAgentWallet(pub, config.identityRegistry, req.agentId)
      if (!wallet.ok) return { ok: false, code: 'UNREACHABLE', error: `chain unreachable: ${wallet.error}` }
      // Who may sign a line: the agent's verified wallet, or (always) its owner. After a transfer
      // the wallet is cleared, so only the new owner's key works until it sets a wallet.
      const allowed = new Set([owner.value.toLowerCase()])
      if (wallet.value !== ZERO) allowed.add(wallet.value.toLowerCase())
      try {
        const results = await Promise.all(
          req.items.map((item) => {
            const key = item.requestHash.toLowerCase()
            const running = inflight.get(key)
            if (running) return running
            const p = one(item, req.agentId, allowed)
            inflight.set(key, p)
            const clear = () => inflight.delete(key)
            p.then(clear, clear)
            return p
          }),
        )
        return { ok: true, results }
      } catch (err) {
        return { ok: false, code: 'UNREACHABLE', error: `chain unreachable: ${errorText(err)}` }
      }
    },
  }
}

class ChainDown extends Error {}
