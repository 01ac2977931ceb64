// After a flash the hub gives the port back to the bridge and waits for the board to say which
// firmware runs: its next `hello` (armed before the port reopens, so none is missed), or, when the
// hello went out before the port was open again (a board not reset by the open; the serial port
// flushes its input when it opens), the `fw` of its answer to `capabilities`, asked once the board
// has answered at all. A hello naming other firmware than expected ends the wait at once.
import { splitFirmware } from '../../bridge/codec/protocol.ts'
import type { BridgeStats, HelloInfo, Json, SendResult } from '../../bridge/types.ts'
import { type Failure, fail } from '../../errors/codes.ts'

export interface HelloSource {
  onHello(fn: (board: string, info: HelloInfo) => void): () => void
  stats(): BridgeStats
  send(board: string, cmd: string, args: Json, opts: { timeoutMs: number }): Promise<SendResult>
}

/**
 * A failure: `UPSTREAM_FAILED` the board names other firmware, `TIMEOUT` no word from it in time,
 * `CANCELLED` the wait was called off; `UNAVAILABLE` (the flasher's) the port did not come back.
 */
export type HelloOutcome =
  | { ok: true; fw: string | null; proto: number | null; by: 'hello' | 'capabilities' }
  | Failure<'UPSTREAM_FAILED' | 'TIMEOUT' | 'CANCELLED' | 'UNAVAILABLE'>

export interface HelloWatch {
  /** Waits up to `timeoutMs` for firmware `expect` (`name/version`; null: any firmware). */
  until(expect: string | null, timeoutMs: number): Promise<HelloOutcome>
  /** Whether a hello has come that `until` has not taken yet. */
  pending(): boolean
  cancel(): void
}

/** How often, while no hello has come, the board is asked for its firmware once it answers. */
const ASK_EVERY_MS = 1000

function fwOf(v: unknown): string | null {
  return typeof v === 'string' ? v : null
}

/** Compares by name and version, so `svc-companion/0.2.0` matches whatever else the hello adds. */
export function sameFirmware(said: string | null, expect: string): boolean {
  if (said === null) return false
  const a = splitFirmware(said)
  const b = splitFirmware(expect)
  return a && b ? a.name === b.name && a.version === b.version : said === expect
}

/** Starts listening for `board`'s hellos now; call before the port reopens. */
export function watchHello(src: HelloSource, board: string): HelloWatch {
  const heard: { fw: string | null; proto: number | null }[] = []
  let wake: (() => void) | null = null
  const off = src.onHello((b, info) => {
    if (b !== board) return
    heard.push({ fw: fwOf(info.fw), proto: typeof info.proto === 'number' ? info.proto : null })
    wake?.()
  })
  let cancelled = false
  return {
    pending: () => heard.length > 0,
    cancel() {
      cancelled = true
      off()
      wake?.()
    },
    async until(expect, timeoutMs) {
      const deadline = Date.now() + timeoutMs
      let lastAsk = 0
      const judge = (fw: string | null, proto: number | null, by: 'hello' | 'capabilities'): HelloOutcome =>
        expect === null || sameFirmware(fw, expect)
          ? { ok: true, fw, proto, by }
          : fail(
              'UPSTREAM_FAILED',
              `the board ${by === 'hello' ? 'said hello as' : 'reports'} ${fw ?? 'no firmware name'}, not ${expect}`,
            )
      try {
        for (;;) {
          const h = heard.shift()
          if (h) return judge(h.fw, h.proto, 'hello')
          if (cancelled) return fail('CANCELLED', 'cancelled')
          const left = deadline - Date.now()
          if (left <= 0)
            return fail(
              'TIMEOUT',
              `no hello${expect ? ` from ${expect}` : ''} within ${Math.round(timeoutMs / 100) / 10} s`,
            )
          const state = src.stats().boards[board]?.state
          if (state === 'online' && Date.now() - lastAsk >= ASK_EVERY_MS) {
            lastAsk = Date.now()
            const r = await src.send(board, 'capabilities', {}, { timeoutMs: Math.min(ASK_EVERY_MS, left) })
            const more = heard.shift()
            if (more) return judge(more.fw, more.proto, 'hello')
            if (r.ok && typeof r.result === 'object' && r.result !== null && !Array.isArray(r.result)) {
              const fw = fwOf((r.result as Record<string, Json>).fw)
              if (fw !== null) return judge(fw, null, 'capabilities')
            }
            continue
          }
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, Math.min(left, 100))
            wake = () => {
              clearTimeout(t)
              resolve()
            }
          })
          wake = null
        }
      } finally {
        off()
      }
    },
  }
}
