// Plays a device on a real serial path (e.g. one end of a socat pty pair), for demos and for tests
// of the real serialport binding: the simulated companion board, or any other `Device` (a test's
// StandardFirmata). The device answers on the same port it prints on, exactly like firmware on a
// USB serial adapter.
import { SerialPortStream } from '@serialport/stream'
import { SerialPort } from 'serialport'
import { withHangupDetection } from '../../bridge/serial/hangup-binding.ts'
import { type Failure, fail } from '../../errors/codes.ts'
import { createSimulatedBoard, type SimulatedBoard, type SimulatorOptions } from './board.ts'
import type { Device } from './device-binding.ts'

export interface PlayedDevice {
  /** Resolves when the port closes (stop() or the other end went away). */
  closed: Promise<void>
  stop(): Promise<void>
}

/** The serial bindings' open error carries no errno code, so any failure to open is `IO_FAILED`. */
export type PlayResult = { ok: true; played: PlayedDevice } | Failure<'IO_FAILED'>

/** Opens `path` through the hangup-aware binding and connects `device` to it until the port closes. */
export function playOnPort(path: string, device: Device, baud: number): Promise<PlayResult> {
  return new Promise((resolve) => {
    const port = new SerialPortStream({
      binding: withHangupDetection(SerialPort.binding),
      path,
      baudRate: baud,
      autoOpen: false,
    })
    let resolveClosed!: () => void
    const closed = new Promise<void>((r) => (resolveClosed = r))
    port.on('error', () => undefined) // reported through open() or as a close
    port.open((err) => {
      if (err) return resolve(fail('IO_FAILED', `cannot open ${path}: ${err.message}`))
      port.on('data', (chunk: Buffer) => device.received(chunk))
      port.once('close', () => {
        device.closed()
        resolveClosed()
      })
      device.opened((bytes) => {
        if (port.isOpen) port.write(bytes)
      })
      resolve({
        ok: true,
        played: {
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

export interface RunningSimulator extends PlayedDevice {
  board: SimulatedBoard
}

export type OpenResult = { ok: true; sim: RunningSimulator } | Failure<'IO_FAILED'>

export async function runSimulatorOnPort(
  path: string,
  name: string,
  opts: SimulatorOptions & { baud?: number } = {},
): Promise<OpenResult> {
  const board = createSimulatedBoard(name, opts)
  const r = await playOnPort(path, board, opts.baud ?? 115200)
  return r.ok ? { ok: true, sim: { board, ...r.played } } : r
}
