// A serial port that hangs up (USB adapter pulled, the far end of a pty gone) makes read(2) return
// 0 bytes at once, for ever. @serialport/bindings-cpp 13.0.x retries a 0-byte read immediately
// (serialport/bindings-cpp#162; the fix, #164, was never merged), so the port spins a CPU core
// and is never reported closed: only a write failing with EIO would end it, and with the
// heartbeat off nothing writes. bindings-interface promises every read at least one byte and
// says any error other than `canceled` is a disconnection; this wrapper keeps that promise by
// turning the end of file into such an error, as pyserial does. Only Unix ports are changed:
// Windows reads do not go through this path, and the mock binding has no file descriptor.
import { read } from 'node:fs'
import { promisify } from 'node:util'
import type { BindingInterface, BindingPortInterface, OpenOptions } from './binding-types.ts'
import { unixRead } from '@serialport/bindings-cpp/dist/unix-read.js'

const readAsync = promisify(read)

export const HANGUP_MESSAGE =
  'the serial device hung up (read gave end of file: unplugged, or the far end closed)'

/** The error a hung-up port's read fails with: not `canceled`, so the stream closes as disconnected. */
export interface HangupError extends Error {
  code: 'EOF'
  disconnect: true
}

function hangupError(): HangupError {
  return Object.assign(new Error(HANGUP_MESSAGE), { code: 'EOF' as const, disconnect: true as const })
}

const readOrHangup: typeof readAsync = (async (
  fd: number,
  buffer: Buffer,
  offset: number,
  length: number,
  position: number | null,
) => {
  const r = await readAsync(fd, buffer, offset, length, position)
  if (r.bytesRead === 0) throw hangupError()
  return r
}) as typeof readAsync

type UnixPort = Parameters<typeof unixRead>[0]['binding']

function isUnixPort(port: BindingPortInterface): port is BindingPortInterface & UnixPort {
  const p = port as Partial<UnixPort>
  return typeof p.fd === 'number' && typeof p.poller === 'object' && p.poller !== null
}

/** `binding` whose Unix ports fail a read at end of file instead of retrying it. */
export function withHangupDetection(binding: BindingInterface): BindingInterface {
  return {
    list: () => binding.list(),
    async open(options: OpenOptions): Promise<BindingPortInterface> {
      const port = await binding.open(options)
      if (!isUnixPort(port)) return port
      return {
        get openOptions() {
          return port.openOptions
        },
        get isOpen() {
          return port.isOpen
        },
        close: () => port.close(),
        read: (buffer, offset, length) => {
          if (buffer.length < offset + length)
            return Promise.reject(new RangeError('serial read: buffer is too small'))
          return unixRead({ binding: port, buffer, offset, length, fsReadAsync: readOrHangup }).catch(
            (err: unknown) => {
              // A read already in the kernel when its owner closes the port fails with EBADF,
              // which unixRead calls a disconnection; bindings-interface says close() cancels
              // pending reads, so a port its owner closed reports the read canceled.
              if (!port.isOpen) throw Object.assign(new Error('Port is not open'), { canceled: true })
              throw err
            },
          )
        },
        write: (buffer) => port.write(buffer),
        update: (o) => port.update(o),
        set: (o) => port.set(o),
        get: () => port.get(),
        getBaudRate: () => port.getBaudRate(),
        flush: () => port.flush(),
        drain: () => port.drain(),
      }
    },
  }
}
