// The `svc start` demo's listing: once `min` lines are attested, list the attested prefix of the
// store (every row verifiable) and let the hub's listing sync post it.
import { fail, type Result } from '../../errors/codes.ts'
import type { AttestStore } from '../attest/store.ts'
import { createListing } from './create.ts'
import type { ListingEntry } from './record.ts'

/** How many lines from seq `from` on are attested without a gap. */
export async function attestedPrefix(store: AttestStore, from = 0): Promise<number> {
  let n = 0
  for await (const r of store.range(from)) {
    if (r.state !== 'attested') break
    n++
  }
  return n
}

export interface DemoListingInput {
  home: string
  store: AttestStore
  agentId: string
  market: string
  min: number
  /**
   * First seq of this session. Each `svc start` is a fresh dev chain, so lines attested in an
   * earlier session (kept in the same SVC_HOME) have no proof on this one and are not listed.
   */
  from: number
  /** Stop waiting (Ctrl-C during the demo). */
  signal: AbortSignal
  pollMs?: number
}

/** Resolves after `ms`, or at once on abort; leaves no listener behind either way. */
export const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((done) => {
    if (signal.aborted) return done()
    const onAbort = (): void => {
      clearTimeout(t)
      done()
    }
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      done()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })

export async function queueDemoListing(i: DemoListingInput): Promise<Result<{ entry: ListingEntry }>> {
  let prefix = 0
  while (!i.signal.aborted && (prefix = await attestedPrefix(i.store, i.from)) < i.min)
    await sleep(i.pollMs ?? 500, i.signal)
  if (i.signal.aborted) return fail('CANCELLED', 'stopped')
  const r = await createListing({
    home: i.home,
    store: i.store,
    agentId: i.agentId,
    market: i.market,
    range: { from: i.from, to: i.from + prefix },
    fields: {
      title: 'Vending machine vend1: attested dispenses',
      summary:
        'Coin, operator check and dispense runs of the vending-dispense SOP, each line attested on chain.',
      description:
        'Operation lines written by the svc hub demo (`npm start`): a simulated vending board sends coin events, the vending-dispense SOP reads the slot sensor, waits for an operator checkpoint, dispenses and attests the sale. Every line is signed by the device key and validated by the attestor on the local chain.',
      machineType: 'vending',
      license: 'research',
      priceNative: '0.01',
    },
  })
  return r.ok ? { ok: true, entry: r.entry } : r
}
