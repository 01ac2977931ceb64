// Whatever a board sends, the bridge does not crash, and every line is counted exactly:
// valid events, garbage, oversized lines, stray replies, blank lines, in 100,000 random chunks.
import t from 'tap'
import { createBridge } from '../../bridge/index.ts'
import { createDeviceBinding } from '../../boards/simulator/device-binding.ts'
import { encodeMessage } from '../../bridge/codec/index.ts'
import { waitFor } from '../helpers/wait.ts'

// A small seeded PRNG (mulberry32) so a failure can be replayed from the printed seed.
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const MALFORMED = [
  '{"event":"message","signal":"a/b","text":"x"}',
  '{"event":"message","signal":"coin","text":7}',
  '{"event":"message","signal":"coin"',
  '{"event":"nope"}',
  '{"id":"1","ok":true}',
  '{"id":1,"ok":false}',
  '[]',
  'null',
  '"string"',
  '{}',
  '{"event":"hello","board":"has space"}',
]

t.test(
  '100,000 random chunks of events, garbage, oversized and malformed lines: no crash, exact counts',
  async (t) => {
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000)
    t.comment(`seed ${seed} (FUZZ_SEED=${seed} to replay)`)
    const rnd = prng(seed)
    const int = (n: number): number => Math.floor(rnd() * n)
    const cap = 256
    const randomBytes = (n: number, exclude: number[]): Buffer => {
      const b = Buffer.allocUnsafe(n)
      for (let i = 0; i < n; i++) {
        let v = int(256)
        while (exclude.includes(v)) v = int(256)
        b[i] = v
      }
      return b
    }

    const want = { events: 0, garbage: 0, oversized: 0, unmatched: 0, lines: 0 }
    const texts: string[] = []
    const parts: Buffer[] = []
    let total = 0
    while (total < 3_300_000) {
      const k = int(100)
      let part: Buffer
      if (k < 40) {
        const text = randomBytes(int(60), [0x0a]).toString('utf8') // may hold U+FFFD and control chars: JSON escapes them
        texts.push(text)
        part = Buffer.from(encodeMessage('s' + int(5), text), 'utf8')
        if (part.length - 1 > cap) {
          texts.pop()
          continue
        }
        want.events++
        want.lines++
      } else if (k < 60) {
        part = Buffer.concat([Buffer.from('#'), randomBytes(int(cap - 1), [0x0a]), Buffer.from('\n')])
        want.garbage++
        want.lines++
      } else if (k < 75) {
        part = Buffer.from(MALFORMED[int(MALFORMED.length)]! + (rnd() < 0.5 ? '\r\n' : '\n'))
        want.garbage++
        want.lines++
      } else if (k < 85) {
        part = Buffer.concat([randomBytes(cap + 1 + int(3 * cap), [0x0a, 0x0d]), Buffer.from('\n')])
        want.oversized++
      } else if (k < 92) {
        part = Buffer.from(`{"id":${int(1000)},"ok":true,"result":null}\n`)
        want.unmatched++
        want.lines++
      } else {
        part = Buffer.from(rnd() < 0.5 ? '\n' : '\r\n')
      }
      parts.push(part)
      total += part.length
    }
    const stream = Buffer.concat(parts)

    const binding = createDeviceBinding()
    const path = '/sim/fuzz'
    let emit: ((b: Buffer) => void) | undefined
    binding.attach(path, {
      opened: (e) => (emit = e),
      received: () => undefined,
      closed: () => (emit = undefined),
    })
    const published: Array<[string, string]> = []
    const warns: string[] = []
    const log = {
      info: () => undefined,
      warn: (_o: object, msg?: string) => void warns.push(msg ?? ''),
      error: () => undefined,
    }
    const bridge = createBridge({
      log,
      now: () => 0, // the clock stands still: the rate limit must hold back every repeat
      boards: [{ name: 'fuzz', port: path, lineCap: cap, heartbeatMs: 0 }],
      publish: async (topic, payload) => void published.push([topic, payload]),
      binding,
      // The bridge pings once at open; this device never answers it, and a generated reply
      // must not match it by chance: the ping times out before the stream starts.
      commandTimeoutMs: 20,
    })
    t.teardown(() => bridge.close())
    await bridge.start()
    await waitFor(() => emit !== undefined, 'port open')
    await waitFor(() => bridge.stats().boards.fuzz!.timeouts === 1, 'the ping at open unanswered')

    let chunks = 0
    let at = 0
    const target = 100_000
    while (at < stream.length) {
      const left = target - chunks
      // Leave at least one byte for each chunk still to come, so the count is exactly `target`
      // whatever the seed (an unclamped draw could take the last bytes a chunk early).
      const size =
        left <= 1
          ? stream.length - at
          : Math.min(
              stream.length - at - (left - 1),
              1 + int(Math.max(1, Math.floor((2 * (stream.length - at)) / left))),
            )
      emit!(stream.subarray(at, at + size))
      at += size
      chunks++
      // Let the port drain now and then, so the mock's buffer stays small and chunking varies.
      if (chunks % 50 === 0) await new Promise((r) => setImmediate(r))
    }
    t.equal(chunks, target, `${target} chunks`)
    await waitFor(
      () =>
        bridge.stats().boards.fuzz!.lines + bridge.stats().boards.fuzz!.oversized ===
        want.lines + want.oversized,
      'every line seen',
    )
    await waitFor(() => bridge.stats().boards.fuzz!.published === want.events, 'every event published')
    const s = bridge.stats().boards.fuzz!
    t.same(
      {
        events: s.events,
        garbage: s.garbage,
        oversized: s.oversized,
        unmatched: s.unmatched,
        lines: s.lines,
        published: s.published,
      },
      { ...want, published: want.events },
      'counts exact',
    )
    t.equal(s.state, 'online', 'still online')
    // The clock stands still, so each kind is logged once; a run slower than the 10 s interval
    // adds the timer's summary of each kind (the same message with the count held back).
    const kinds = warns.map((w) => w.replace(/ \(\d+ more since the last report\)$/, ''))
    t.same(
      [...new Set(kinds)].sort(),
      [
        'bad line from board ignored',
        'line longer than the cap dropped whole',
        'reply matches no waiting command (late after a timeout?)',
      ],
      'dropped lines logged at a bounded rate: each kind at once, then summarised',
    )
    const events = published.filter(([topic]) => topic !== 'boards/fuzz/availability')
    t.same(
      events.map(([, p]) => p),
      texts.map((x) => x),
      'every event text published, in order, unchanged',
    )
  },
)

t.test(
  'a board that never sends a newline: megabytes dropped as one oversized line, then back to normal',
  async (t) => {
    const binding = createDeviceBinding()
    const path = '/sim/no-newline'
    let emit: ((b: Buffer) => void) | undefined
    binding.attach(path, {
      opened: (e) => (emit = e),
      received: () => undefined,
      closed: () => (emit = undefined),
    })
    const published: string[] = []
    const bridge = createBridge({
      boards: [{ name: 'spew', port: path, heartbeatMs: 0 }],
      publish: async (topic, payload) => void published.push(`${topic} ${payload}`),
      binding,
    })
    t.teardown(() => bridge.close())
    await bridge.start()
    await waitFor(() => emit !== undefined, 'port open')
    const block = Buffer.alloc(64 * 1024, 0x78)
    for (let i = 0; i < 32; i++) {
      emit!(block) // 2 MiB in all, no newline (2048 times the cap)
      await new Promise((r) => setImmediate(r))
    }
    emit!(Buffer.from('\n' + encodeMessage('coin', 'after')))
    await waitFor(() => published.includes('boards/spew/coin after'), 'the next line gets through')
    t.match(bridge.stats().boards.spew!, { oversized: 1, lines: 1, events: 1, garbage: 0, state: 'online' })
  },
)
