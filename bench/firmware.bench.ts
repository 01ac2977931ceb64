// The companion firmware on an emulated Uno (ATmega328P in simavr, held to real time, UART0 on a
// pty): pin→MQTT latency, from driving the coin pin low to the event reaching an MQTT subscriber
// through the real bridge and an Aedes broker on loopback, beside the line's own time on the wire
// at 115200 baud (its bytes × 10 bits), the floor no firmware can beat. Then the firmware's flash
// and static RAM beside the Uno's limits (aim: static RAM ≤ 30% of 2 KB).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { buildHarness, emulatedUnoMissing, startEmulatedUno } from '../boards/firmware/simavr/emulated-uno.ts'
import { buildUno, ofLimit, UNO_FLASH_MAX, UNO_RAM } from '../boards/firmware/uno-build.ts'
import { createBridge } from '../bridge/index.ts'
import { startBareBroker } from './aedes-broker.ts'

const N = Number(process.env.BENCH_N ?? 300)
const BAUD = 115200
// What the sketch sends for one coin (examples/svc_companion), newline included.
const EVENT_LINE = `${JSON.stringify({ event: 'message', signal: 'coin', text: '{"slot":"A1","amount":1}' })}\n`

const pct = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

async function main(): Promise<void> {
  const missing = emulatedUnoMissing()
  if (missing) {
    process.stdout.write(`firmware bench skipped: ${missing}\n`)
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'svc-fw-bench-'))
  try {
    const built = await buildUno(join(dir, 'build'))
    if (!built.ok) throw new Error(built.error)
    const harness = await buildHarness(dir)
    if (!harness.ok) throw new Error(harness.error)
    const link = join(dir, 'uno')
    const uno = await startEmulatedUno({ harness: harness.exe, elf: built.build.elf, link, paused: true })
    const b = await startBareBroker()
    const pub = await mqtt.connectAsync(b.url, { reconnectPeriod: 0 })
    const sub = await mqtt.connectAsync(b.url, { reconnectPeriod: 0 })
    await sub.subscribeAsync('boards/vend1/coin', { qos: 1 })
    let arrived: (() => void) | undefined
    sub.on('message', () => arrived?.())
    const bridge = createBridge({
      // No heartbeat: a ping on the line would queue behind or ahead of an event and colour it.
      boards: [{ name: 'vend1', port: link, heartbeatMs: 0 }],
      publish: async (topic, payload, opts) => {
        await pub.publishAsync(topic, payload, opts)
      },
    })
    await bridge.start()
    await uno.ask('run', 'running')
    while (bridge.stats().boards.vend1?.hello !== 'vend1') await new Promise((r) => setTimeout(r, 5))

    const latencies: number[] = []
    for (let i = 0; i < N + 10; i++) {
      const got = new Promise<void>((r) => (arrived = r))
      const t0 = performance.now()
      uno.tell('pulse 2 2')
      await got
      if (i >= 10) latencies.push(performance.now() - t0) // the first few warm the JIT
      // Let the pin go high again (2 ms of MCU time) before the next falling edge.
      await new Promise((r) => setTimeout(r, 4))
    }
    latencies.sort((a, c) => a - c)
    const wireMs = (Buffer.byteLength(EVENT_LINE) * 10 * 1000) / BAUD
    const f = (ms: number) => `${ms.toFixed(2)} ms`
    process.stdout.write(
      `pin→MQTT on the emulated Uno (${N} coin pulses, QoS 1): p50 ${f(pct(latencies, 50))}, p99 ${f(pct(latencies, 99))}, max ${f(latencies.at(-1)!)}\n` +
        `  baseline, the event line's own time on the wire at ${BAUD} baud: ${Buffer.byteLength(EVENT_LINE)} B × 10 bits = ${f(wireMs)}\n` +
        // simavr 1.6 times a byte as 11 bits (it counts a parity bit the 8N1 frame does not have) at
        // the rate the Uno's divider really gives (16 MHz / 8 / 17 = 117,647 baud, U2X on).
        `  the emulated line (simavr: 11 bits a byte at 117,647 baud): ${f((Buffer.byteLength(EVENT_LINE) * 11 * 1000) / 117_647)}\n` +
        `  halts: ${uno.halts.length}\n`,
    )
    process.stdout.write(
      `firmware for an Uno (Debian gcc-avr and arduino-core-avr): flash ${ofLimit(built.build.flash, UNO_FLASH_MAX)}, ` +
        `static RAM ${ofLimit(built.build.ram, UNO_RAM)} (aim ≤ 30%)\n`,
    )
    await bridge.close()
    await uno.kill()
    await pub.endAsync(true)
    await sub.endAsync(true)
    await b.stop()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
