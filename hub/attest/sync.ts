// Sync when online: submits pending lines in seq order, in batches, with retry and backoff,
// exactly once. Per round:
//   1. request: the device (the agent's approved operator) sends validationRequest(attestor,
//      agentId, requestUri, requestHash) for the pending lines (request-batch.ts): many per
//      transaction through the batch executor where the chain has one (chain/README.md:
//      Batching), else one per transaction straight to the registry. Either way fees come from
//      the fee history, a stuck transaction is replaced, and every attempt is SAVED with its
//      lines (state `sending`) BEFORE it is broadcast (chain/tx-sender.ts), so a restart drives
//      the same transaction again: a line is never requested twice and never skipped. Lines whose
//      request is already on chain (ours) move on.
//   2. attest: the lines go to the attestor, which answers each on chain; then `attested`.
import { type Address, BaseError, parseGwei } from 'viem'
import type { ChainInfo } from '../../chain/chain-file.ts'
import { type SvcPublicClient, publicClientFor } from '../../chain/clients.ts'
import { preflightLine, runPreflight } from '../../chain/preflight-reads.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { createCallRoute } from '../../chain/call-route.ts'
import { createTxSender } from '../../chain/tx-sender.ts'
import { createBatchRequester } from './request-batch.ts'
import { type SyncStatus, createStatusTracker } from './sync-status.ts'
import { ATTEST_PATH, type ItemAnswer } from '../../records/attestor-request.ts'
import { errorText } from '../../errors/text.ts'
import type { Log } from '../log.ts'
import type { DeviceSigner } from './device-key.ts'
import type { AttestRecord } from './record.ts'
import type { AttestStore } from './store.ts'

export type SyncChainConfig = Pick<
  ChainInfo,
  'rpcUrl' | 'validationRegistry' | 'agentId' | 'attestorAddress'
> &
  Partial<Pick<ChainInfo, 'identityRegistry' | 'batchExecutor'>>

export interface SyncProgress {
  phase: 'request' | 'attest'
  /** Lines finished so far in this run. */
  done: number
  /** Lines in the queue when the run started. */
  total: number
}

/** Where sync reports: a logger's info and warn (either may be absent), and progress for a bar. */
export type SyncLog = Partial<Pick<Log, 'info' | 'warn'>> & { progress?(p: SyncProgress): void }

export interface SyncOptions {
  store: AttestStore
  chain: SyncChainConfig
  /** Origin of the attestor service (e.g. http://127.0.0.1:8545); ATTEST_PATH is appended. */
  attestorUrl: string
  signer: DeviceSigner
  log?: SyncLog
  batchSize?: number
  /** start(): wait between runs when the queue is empty. */
  idleMs?: number
  /** start(): backoff after a failed run: min, doubling to max, with jitter. */
  backoffMinMs?: number
  backoffMaxMs?: number
  fetch?: typeof fetch
  /** How long to wait for a request's receipt before checking what became of its nonce. */
  receiptTimeoutMs?: number
  /** Batched: never offer more than this per gas (gwei); absent: no cap. */
  feeCapGwei?: number
  /** Batched: a request transaction not mined this long after signing is replaced (default 60 s). */
  stuckAfterMs?: number
  /** Batched: most lines per request transaction (the block gas limit may allow fewer). */
  maxBatchLines?: number
  /** Per RPC call: timeout (default 15 s) and retries (default 5, Retry-After honoured). */
  rpcTimeoutMs?: number
  rpcRetryCount?: number
  /** While catching up, log progress this often (default 10 s). */
  progressEveryMs?: number
}

export interface SyncReport {
  requested: number
  attested: number
  failed: number
  remaining: number
}

export interface AttestSync {
  start(): void
  stop(): Promise<void>
  /** Drains the queue once; throws when the chain or the attestor cannot be reached. */
  runOnce(): Promise<SyncReport>
  /** What sync is doing now (sync-status.ts). */
  status(): SyncStatus
}

class SyncError extends Error {}

export function createAttestSync(opts: SyncOptions): AttestSync {
  const receiptTimeoutMs = opts.receiptTimeoutMs ?? 30_000
  const log = opts.log ?? {}
  const doFetch = opts.fetch ?? fetch
  const tracker = createStatusTracker()
  const pub: SvcPublicClient = publicClientFor(opts.chain.rpcUrl, {
    timeout: opts.rpcTimeoutMs ?? 15_000,
    retryCount: opts.rpcRetryCount ?? 5,
    batch: true,
    onRateLimited: (until) => tracker.rateLimited(until, Date.now()),
  })
  const agentId = BigInt(opts.chain.agentId)
  const attestor = opts.chain.attestorAddress as Address
  const executor = opts.chain.batchExecutor as Address | undefined
  const sender = createTxSender({
    pub,
    account: opts.signer.account,
    ...(opts.feeCapGwei !== undefined ? { feeCapPerGas: parseGwei(String(opts.feeCapGwei)) } : {}),
    stuckAfterMs: opts.stuckAfterMs ?? 60_000,
    save: (tx) => requester!.saveTx(tx),
    onState: (st) => {
      if (st.kind === 'stuck') tracker.stuck(st.nonce, st.replaced, st.detail, Date.now())
      else if (st.kind === 'mined') tracker.unstuck(Date.now())
    },
    warn: (m) => log.warn?.(m),
  })
  // Without an executor (a chain without EIP-7702) the same requester sends one line per
  // transaction, straight to the registry.
  const requester = createBatchRequester({
    pub,
    store: opts.store,
    sender,
    route: createCallRoute({
      pub,
      account: opts.signer.address,
      registry: opts.chain.validationRegistry,
      executor,
    }),
    attestor,
    agentId,
    maxLines: opts.maxBatchLines ?? opts.batchSize ?? 400,
    rowIsOurs: (r) => rowIsOurs(r),
    warn: (m) => log.warn?.(m),
  })
  let running: Promise<SyncReport> | undefined
  let stopped = true
  let timer: NodeJS.Timeout | undefined
  let wake: (() => void) | undefined
  let chainChecked = false
  let preflightPassed = false

  /**
   * Before the first transaction: is this a chain svc can trust (chain/preflight.ts)? A failure
   * sends nothing and marks nothing; the next run checks again (the owner may fix it meanwhile).
   */
  async function preflightOnce(): Promise<void> {
    if (preflightPassed) return
    const r = await runPreflight(
      {
        rpcUrl: opts.chain.rpcUrl,
        validationRegistry: opts.chain.validationRegistry,
        ...(opts.chain.identityRegistry ? { identityRegistry: opts.chain.identityRegistry } : {}),
        agentId,
        device: opts.signer.address,
        attestorAddress: attestor,
      },
      pub,
    )
    for (const w of r.warnings) log.warn?.(w)
    if (!r.ok) throw new SyncError(`chain: ${preflightLine(r)}`)
    preflightPassed = true
  }

  /**
   * The lines' states are true only on the chain they were attested on. A dev chain started
   * afresh, or a registry redeployed, has none of their rows: say so, and attest them again.
   * The chain is named by its genesis block hash and the registry address.
   */
  async function checkChain(): Promise<void> {
    if (chainChecked) return
    const genesis = await pub.getBlock({ blockNumber: 0n }).catch((err: unknown) => {
      throw new SyncError(`chain: ${err instanceof BaseError ? err.shortMessage : String(err)}`)
    })
    const mark = `${genesis.hash}:${opts.chain.validationRegistry.toLowerCase()}`
    const had = opts.store.chainMark()
    if (had !== undefined && had !== mark) {
      const back = await opts.store.rebase(mark, { force: true })
      if (back > 0)
        log.warn?.(
          `this chain (genesis ${genesis.hash}, registry ${opts.chain.validationRegistry}) is not the one these lines were attested on; ${back} lines will be attested again on it`,
        )
    } else {
      // Two dev chains started in the same second from the same keys have the same genesis and
      // the same registry address: the mark cannot tell them apart, the rows can. The newest line
      // counted as attested must have its row here.
      const missing = await newestAttestedMissing()
      // Nothing to write when the mark is already this chain's and its rows are here.
      const back =
        missing !== null || had === undefined ? await opts.store.rebase(mark, { force: missing !== null }) : 0
      if (missing !== null && back > 0)
        log.warn?.(
          `this chain has no row for line ${missing + 1}, which was attested (registry ${opts.chain.validationRegistry}): it is not the chain these lines were attested on; ${back} lines will be attested again on it`,
        )
    }
    chainChecked = true
  }

  /** The seq of the newest attested line whose row this chain does not hold, or null. */
  async function newestAttestedMissing(): Promise<number | null> {
    if (opts.store.counts().attested === 0) return null
    // The newest lines are at the end; look back a bounded way for one that is attested.
    for (let seq = opts.store.size() - 1, looked = 0; seq >= 0 && looked < 256; seq--, looked++) {
      const rec = await opts.store.get(seq)
      if (rec?.state !== 'attested') continue
      const row = await readValidationStatus(pub, opts.chain.validationRegistry, rec.requestHash)
      if (row.ok) return null
      if (row.kind === 'unknown') return seq
      throw new SyncError(`chain: ${row.error}`)
    }
    return null
  }

  async function rowIsOurs(rec: AttestRecord): Promise<'ours' | 'none' | string> {
    const row = await readValidationStatus(pub, opts.chain.validationRegistry, rec.requestHash)
    if (!row.ok) {
      if (row.kind === 'unknown') return 'none'
      throw new SyncError(`chain: ${row.error}`)
    }
    if (row.value.validator.toLowerCase() === attestor.toLowerCase() && row.value.agentId === agentId)
      return 'ours'
    return `request hash ${rec.requestHash} is held by another request (validator ${row.value.validator}, agent ${row.value.agentId})`
  }

  /**
   * Requests signed one per line by an older svc (raw bytes saved on the line, state `sending`):
   * the same bytes go out again and their receipts settle the lines. New requests go through
   * the requester, batched or not.
   */
  async function finishLegacy(sending: AttestRecord[]): Promise<{ requested: number; failed: number }> {
    for (const rec of sending) await broadcast(rec)
    const done = await Promise.all(
      sending.map(async (rec): Promise<AttestRecord> => {
        const hash = rec.requestTx!.hash
        const receipt =
          (await pub.getTransactionReceipt({ hash }).catch(() => undefined)) ??
          (await pub.waitForTransactionReceipt({ hash, timeout: receiptTimeoutMs }).catch(() => undefined))
        if (!receipt) return unmined(rec)
        if (receipt.status === 'success') return { ...rec, state: 'requested' }
        const owner = await rowIsOurs(rec)
        if (owner === 'ours') return { ...rec, state: 'requested' }
        return {
          ...rec,
          state: 'failed',
          error:
            owner === 'none' ? `validationRequest reverted (${hash}, nonce ${rec.requestTx!.nonce})` : owner,
        }
      }),
    )
    await opts.store.update(done)
    let requested = 0
    let failed = 0
    for (const r of done) {
      if (r.state === 'failed') failed++
      else if (r.state === 'requested') requested++
    }
    return { requested, failed }
  }

  /**
   * A saved request that is not mined in time. If its nonce is still free, it may yet be mined:
   * retry later (same bytes). If the nonce was used by another transaction, this one can never
   * be mined, so the line goes back to `pending` and gets a fresh transaction; the request
   * check (rowIsOurs) runs first, so a line already requested is never requested again.
   */
  async function unmined(rec: AttestRecord): Promise<AttestRecord> {
    const tx = rec.requestTx!
    const mined = await pub.getTransactionCount({ address: opts.signer.account.address, blockTag: 'latest' })
    if (mined <= tx.nonce)
      throw new SyncError(
        `request of line ${rec.seq + 1} (${tx.hash}, nonce ${tx.nonce}) is not mined yet; will re-send the same transaction`,
      )
    const owner = await rowIsOurs(rec)
    if (owner === 'ours') return { ...rec, state: 'requested' }
    if (owner !== 'none') return { ...rec, state: 'failed', error: owner }
    log.warn?.(
      `line ${rec.seq + 1}: nonce ${tx.nonce} was used by another transaction; signing a new request`,
    )
    const { requestTx: _dropped, ...rest } = rec
    return { ...rest, state: 'pending' }
  }

  async function broadcast(rec: AttestRecord): Promise<void> {
    const tx = rec.requestTx!
    // Batched (no bytes on the line): the saved send is driven by the batch requester.
    if (tx.raw === undefined) return
    const known = await pub.getTransactionReceipt({ hash: tx.hash }).catch(() => undefined)
    if (known) return
    try {
      await pub.sendRawTransaction({ serializedTransaction: tx.raw })
    } catch (err) {
      const msg = err instanceof BaseError ? err.details || err.shortMessage : String(err)
      // Already in the pool, or already mined: either way the one transaction is out.
      if (/already known|already imported|nonce too low|known transaction/i.test(msg)) {
        log.info?.(`line ${rec.seq + 1}: request ${tx.hash} (nonce ${tx.nonce}) already out: ${msg}`)
        return
      }
      throw new SyncError(`broadcasting request of line ${rec.seq + 1}: ${msg}`)
    }
  }

  async function attest(batch: AttestRecord[]): Promise<{ attested: number; failed: number }> {
    const todo = batch.filter((r) => r.state === 'requested')
    if (todo.length === 0) return { attested: 0, failed: 0 }
    let res: Response
    try {
      res = await doFetch(new URL(ATTEST_PATH, opts.attestorUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          agentId: opts.chain.agentId,
          items: todo.map((r) => ({ requestHash: r.requestHash, line: r.line, signature: r.signature })),
        }),
      })
    } catch (err) {
      throw new SyncError(`attestor unreachable at ${opts.attestorUrl}: ${errorText(err)}`)
    }
    const body = (await res.json().catch(() => ({}))) as { results?: ItemAnswer[]; error?: string }
    if (!res.ok || !Array.isArray(body.results))
      throw new SyncError(`attestor answered ${res.status}: ${body.error ?? 'no results'}`)
    const byHash = new Map(body.results.map((r) => [r.requestHash.toLowerCase(), r]))
    const updates: AttestRecord[] = []
    let attested = 0
    for (const rec of todo) {
      const r = byHash.get(rec.requestHash.toLowerCase())
      if (!r) continue
      if (r.ok) {
        updates.push({ ...rec, state: 'attested', ...(r.txHash ? { responseTx: r.txHash } : {}) })
        attested++
      } else {
        // Refusals are kept on the line and retried next run (the agent's wallet may be fixed).
        log.warn?.(`line ${rec.seq + 1}: attestor refused: ${r.error}`)
        updates.push({ ...rec, error: r.error })
      }
    }
    await opts.store.update(updates)
    return { attested, failed: 0 }
  }

  /** Lines posted to the attestor at once (its limit, records/attestor-request.ts) and in parallel. */
  const ATTEST_CHUNK = 100
  const ATTEST_PARALLEL = 4
  /** Most lines read from the queue per round of the batched path. */
  const QUEUE_READ = opts.maxBatchLines ?? opts.batchSize ?? 400

  async function runBatched(report: SyncReport, total: number): Promise<void> {
    const every = opts.progressEveryMs ?? 10_000
    let lastLog = Date.now()
    let done = 0
    const tick = (n: number) => {
      done += n
      tracker.lineDone(n, Date.now())
      log.progress?.({ phase: 'attest', done, total })
      if (Date.now() - lastLog >= every) {
        lastLog = Date.now()
        log.info?.(`sync progress: ${tracker.snapshot(Date.now()).line}`)
      }
    }
    let attesting: Promise<void> = Promise.resolve()
    const attestAll = async (fresh: AttestRecord[]): Promise<void> => {
      const chunks: AttestRecord[][] = []
      for (let i = 0; i < fresh.length; i += ATTEST_CHUNK) chunks.push(fresh.slice(i, i + ATTEST_CHUNK))
      for (let i = 0; i < chunks.length; i += ATTEST_PARALLEL) {
        const ats = await Promise.all(chunks.slice(i, i + ATTEST_PARALLEL).map((ch) => attest(ch)))
        for (const at of ats) {
          report.attested += at.attested
          tick(at.attested)
        }
      }
    }
    const resumed = await requester.resume()
    report.requested += resumed.requested
    report.failed += resumed.failed
    if (resumed.failed) tick(resumed.failed)
    let afterSeq = -1
    for (;;) {
      const batch = await opts.store.queue(QUEUE_READ, afterSeq + 1)
      if (batch.length === 0) break
      // Requests signed one per line before batching (bytes on the line) go out the old way.
      const legacy = batch.filter((r) => r.state === 'sending' && r.requestTx?.raw !== undefined)
      if (legacy.length) {
        const rq = await finishLegacy(legacy)
        report.requested += rq.requested
        report.failed += rq.failed
      }
      const rq = await requester.request(batch.filter((r) => r.state === 'pending'))
      report.requested += rq.requested
      report.failed += rq.failed
      if (rq.failed) tick(rq.failed)
      if (!rq.clean) continue // lines went back to pending: read the queue again from the same place
      const fresh = (await Promise.all(batch.map((r) => opts.store.get(r.seq)))).filter(
        (r): r is AttestRecord => r !== undefined && r.state === 'requested',
      )
      // The attestor answers this batch while the device requests the next one: two accounts,
      // two nonces, so the two transactions streams overlap. Answers stay in batch order.
      await attesting
      attesting = attestAll(fresh)
      attesting.catch(() => undefined) // awaited (and thrown) at the next round or the end
      afterSeq = batch[batch.length - 1]!.seq
    }
    await attesting
  }

  async function runOnce(): Promise<SyncReport> {
    if (running) return running
    running = (async () => {
      const report: SyncReport = { requested: 0, attested: 0, failed: 0, remaining: 0 }
      await preflightOnce()
      await checkChain()
      const c = opts.store.counts()
      const total = c.pending + c.sending + c.requested
      tracker.runStarted(total, Date.now())
      await runBatched(report, total)
      const after = opts.store.counts()
      report.remaining = after.pending + after.sending + after.requested
      return report
    })()
    try {
      const r = await running
      tracker.runEnded(Date.now())
      return r
    } finally {
      running = undefined
    }
  }

  async function loop(): Promise<void> {
    let backoff = opts.backoffMinMs ?? 500
    while (!stopped) {
      let wait = opts.idleMs ?? 5000
      try {
        const r = await runOnce()
        backoff = opts.backoffMinMs ?? 500
        if (r.requested + r.attested > 0)
          log.info?.(`sync: ${r.requested} requested, ${r.attested} attested, ${r.remaining} remaining`)
      } catch (err) {
        log.warn?.(`sync failed, retrying in ${backoff} ms: ${errorText(err)}`)
        wait = backoff + Math.floor(Math.random() * backoff * 0.2)
        tracker.runFailed(errorText(err), Date.now() + wait, Date.now())
        backoff = Math.min(backoff * 2, opts.backoffMaxMs ?? 60_000)
      }
      if (stopped) break
      await new Promise<void>((resolve) => {
        wake = resolve
        timer = setTimeout(resolve, wait)
      })
    }
  }

  let loopDone: Promise<void> | undefined
  return {
    start() {
      if (!stopped) return
      stopped = false
      loopDone = loop()
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      wake?.()
      await loopDone
      await running?.catch(() => undefined)
    },
    runOnce,
    status: () => tracker.snapshot(Date.now()),
  }
}
