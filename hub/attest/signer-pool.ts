// A DeviceSigner that spreads line signatures over worker threads. Signing (pure-JS secp256k1)
// is what bounds attested lines per second on one core; with idle cores this scales with them.
// Same signatures as signerFromKey (RFC 6979 is deterministic), same interface.
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type { Hex } from 'viem'
import { type DeviceSigner, signerFromKey } from './device-key.ts'

export interface PooledSigner extends DeviceSigner {
  close(): Promise<void>
}

interface Pending {
  line: string
  resolve: (sig: Hex) => void
  reject: (err: Error) => void
}

export function createPooledSigner(privateKey: Hex, workers = Math.max(1, availableParallelism() - 1)): PooledSigner {
  const base = signerFromKey(privateKey)
  const pool = Array.from({ length: workers }, () => new Worker(new URL('./sign-worker.mjs', import.meta.url), { workerData: { privateKey } }))
  const waiting = new Map<number, Pending[]>()
  let nextId = 0
  let queue: Pending[] = []
  let scheduled = false
  let turn = 0
  for (const w of pool) {
    w.unref()
    w.on('message', (m: { id: number; sigs?: Hex[]; error?: string }) => {
      const batch = waiting.get(m.id)
      waiting.delete(m.id)
      batch?.forEach((p, i) => (m.sigs?.[i] ? p.resolve(m.sigs[i]!) : p.reject(new Error(m.error ?? 'signing failed'))))
    })
  }
  function flush(): void {
    scheduled = false
    const all = queue
    queue = []
    const per = Math.ceil(all.length / pool.length)
    for (let i = 0; i < all.length; i += per) {
      const chunk = all.slice(i, i + per)
      const id = nextId++
      waiting.set(id, chunk)
      pool[turn++ % pool.length]!.postMessage({ id, lines: chunk.map((p) => p.line) })
    }
  }
  return {
    address: base.address,
    account: base.account,
    signLine(line) {
      return new Promise<Hex>((resolve, reject) => {
        queue.push({ line, resolve, reject })
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
    },
    async close() {
      await Promise.all(pool.map((w) => w.terminate()))
    },
  }
}
