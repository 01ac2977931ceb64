// Plays a simulated board on a real serial path (e.g. one end of a socat pty pair), for demos
// and for tests of the real serialport binding. The simulator answers on the same port it
// prints on, exactly like the firmware on a USB serial adapter.
import { SerialPortStream } from '@serialport/stream'
import { SerialPort } from 'serialport'
import { withHangupDetection } from '../../bridge/serial/hangup-binding.ts'
import { createSimulatedBoard, type SimulatedBoard, type SimulatorOptions } from './board.ts'

export interface RunningSimulator {
  board: SimulatedBoard
  /** Resolves when the port closes (stop() or the other end went away). */
  closed: Promise<void>
  stop(): Promise<void>
}

export type OpenResult = { ok: true; sim: RunningSimulator } | { ok: false; error: string }

export function runSimulatorOnPort(path: string, name: string, opts: SimulatorOptions & { baud?: number } = {}): Promise<OpenResult> {
  const board = createSimulatedBoard(name, opts)
  return new Promise((resolve) => {
    const port = new SerialPortStream({ binding: withHangupDetection(SerialPort.binding), path, baudRate: opts.baud ?? 115200, autoOpen: false })
    let resolveClosed!: () => void
    const closed = new Promise<void>((r) => (resolveClosed = r))
    port.on('error', () => undefined) // reported through open() or as a close
    port.open((err) => {
      if (err) return resolve({ ok: false, error: `cannot open ${path}: ${err.message}` })
      port.on('data', (chunk: Buffer) => board.received(chunk))
      port.once('close', () => {
        board.closed()
        resolveClosed()
      })
      board.opened((bytes) => {
        if (port.isOpen) port.write(bytes)
      })
      resolve({
        ok: true,
        sim: {
          board,
          closed,
          stop: async () => {
            if (port.isOpen) await new Promise<void>((r) => port.close(() => r()))
            await closed
          },
        },
      })
    })
  })
}
