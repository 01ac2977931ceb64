// A simulated companion board: says hello, emits `message` events at a rate, answers commands
// like the firmware. It plays on any byte transport (the device binding in-process, or a real
// path such as one end of a socat pty pair), so it is a `Device` and also drives a raw stream.
import { createLineFramer, encodeHello, encodeMessage, encodeReply } from '../../bridge/codec/index.ts'
import { SIM_FW, SIM_LINE_CAP, SIM_PROTO, answerCommand } from './answer.ts'
import type { SimulatorOptions } from '../../bridge/types.ts'
import type { Device } from './device-binding.ts'

export type { SimulatorOptions }

export interface SimulatedBoard extends Device {
  readonly name: string
  /** Emits `count` events now (used by benches and tests instead of the timer). */
  emitEvents(count: number): void
  /** Sends raw bytes as if the firmware printed them. */
  emitRaw(bytes: Buffer | string): void
  setMute(mute: boolean): void
  stats(): { emitted: number; commands: number; answered: number; connected: boolean }
}

const SLOTS = ['A1', 'A2', 'B1', 'B2']
export function vendingCoin(n: number): string {
  return JSON.stringify({ slot: SLOTS[n % SLOTS.length], amount: 2 - (n % 2) })
}

export function createSimulatedBoard(name: string, opts: SimulatorOptions = {}): SimulatedBoard {
  const rate = opts.rate ?? 1
  const signal = opts.signal ?? 'coin'
  const text = opts.text ?? vendingCoin
  let mute = opts.mute ?? false
  let emit: ((bytes: Buffer | string) => void) | undefined
  let timer: NodeJS.Timeout | undefined
  let n = 0
  let commands = 0
  let answered = 0
  const pins = new Uint8Array(70)
  const framer = createLineFramer(SIM_LINE_CAP)

  function emitEvents(count: number): void {
    // A muted board is a hung one: it says nothing at all.
    if (!emit || mute) return
    let out = ''
    for (let i = 0; i < count; i++) out += encodeMessage(signal, text(n++))
    emit(out)
  }

  function startTimer(): void {
    if (rate <= 0) return
    // Whole events per tick at high rates; one tick per event below 100/s.
    const tickMs = Math.max(10, 1000 / rate)
    let owed = 0
    timer = setInterval(() => {
      owed += (rate * tickMs) / 1000
      const whole = Math.floor(owed)
      owed -= whole
      emitEvents(whole)
    }, tickMs)
    timer.unref?.()
  }

  return {
    name,
    opened(e) {
      emit = e
      framer.reset()
      if (!mute) emit(encodeHello(name, SIM_FW, SIM_PROTO))
      startTimer()
    },
    received(chunk) {
      framer.push(chunk, (line) => {
        commands++
        if (mute) return
        const a = answerCommand(line.toString('utf8'), pins)
        if (a && emit) {
          answered++
          emit(encodeReply(a.id, a.reply))
        }
      })
    },
    closed() {
      emit = undefined
      if (timer) clearInterval(timer)
      timer = undefined
    },
    emitEvents,
    emitRaw(bytes) {
      emit?.(bytes)
    },
    setMute(m) {
      mute = m
    },
    stats: () => ({ emitted: n, commands, answered, connected: emit !== undefined }),
  }
}
