// A serialport binding for playing devices in-process: the serialport mock binding
// (@serialport/binding-mock), with a device attached at a path that sees what the host writes
// and can answer, and a plug you can pull. The mock alone has neither a far end nor an unplug.
// Unplug follows bindings-interface: a pending read fails with an error that is not `canceled`,
// so SerialPortStream reports a disconnect exactly as it does for a real USB serial adapter.
import type {
  BindingInterface,
  BindingPortInterface,
  OpenOptions,
} from '../../bridge/serial/binding-types.ts'
import { SerialPortMock } from 'serialport'

const MockBinding = SerialPortMock.binding

/** The far end of a port: a simulated board, or a test script. */
export interface Device {
  /** The host opened the port; `emit` sends bytes to the host until `closed`. */
  opened(emit: (bytes: Buffer | string) => void): void
  /** Bytes the host wrote. */
  received(chunk: Buffer): void
  /** The host closed the port, or it was unplugged. */
  closed(): void
}

export interface DeviceBinding extends BindingInterface {
  attach(path: string, device: Device): void
  detach(path: string): void
  /** Pulls the plug: the open port (if any) fails its read as a disconnect; opens fail until `replug`. */
  unplug(path: string): void
  replug(path: string): void
  isOpen(path: string): boolean
}

interface Slot {
  device: Device
  plugged: boolean
  port: DevicePort | undefined
}

class DevicePort implements BindingPortInterface {
  private unplugged: Promise<never>
  private pull!: (err: Error) => void
  private ended = false

  constructor(
    private readonly inner: BindingPortInterface & { emitData(data: Buffer | string): void },
    private readonly slot: Slot,
  ) {
    this.unplugged = new Promise<never>((_, reject) => (this.pull = reject))
    this.unplugged.catch(() => undefined)
    slot.port = this
    slot.device.opened((bytes) => {
      if (!this.ended && inner.isOpen) inner.emitData(bytes)
    })
  }

  get openOptions(): Required<OpenOptions> {
    return this.inner.openOptions
  }
  get isOpen(): boolean {
    return this.inner.isOpen
  }
  set isOpen(v: boolean) {
    this.inner.isOpen = v
  }

  unplug(): void {
    this.pull(Object.assign(new Error('device disconnected (unplugged)'), { disconnected: true }))
  }

  private end(): void {
    if (this.ended) return
    this.ended = true
    if (this.slot.port === this) this.slot.port = undefined
    this.slot.device.closed()
  }

  async close(): Promise<void> {
    this.end()
    await this.inner.close()
  }
  read(buffer: Buffer, offset: number, length: number): Promise<{ buffer: Buffer; bytesRead: number }> {
    return Promise.race([this.inner.read(buffer, offset, length), this.unplugged])
  }
  async write(buffer: Buffer): Promise<void> {
    await Promise.race([this.inner.write(buffer), this.unplugged])
    if (!this.ended) this.slot.device.received(Buffer.from(buffer))
  }
  update(options: { baudRate: number }): Promise<void> {
    return this.inner.update(options)
  }
  set(options: object): Promise<void> {
    return this.inner.set(options)
  }
  get(): ReturnType<BindingPortInterface['get']> {
    return this.inner.get()
  }
  getBaudRate(): Promise<{ baudRate: number }> {
    return this.inner.getBaudRate()
  }
  flush(): Promise<void> {
    return this.inner.flush()
  }
  drain(): Promise<void> {
    return Promise.race([this.inner.drain(), this.unplugged])
  }
}

export function createDeviceBinding(): DeviceBinding {
  const slots = new Map<string, Slot>()
  return {
    list: () => MockBinding.list(),
    async open(options: OpenOptions): Promise<BindingPortInterface> {
      const slot = slots.get(options.path)
      if (!slot) throw new Error(`no device at ${options.path}`)
      if (!slot.plugged) throw new Error(`cannot open ${options.path}: no such device (unplugged)`)
      const inner = await MockBinding.open(options)
      if (!slot.plugged) {
        await inner.close()
        throw new Error(`cannot open ${options.path}: no such device (unplugged)`)
      }
      return new DevicePort(inner, slot)
    },
    attach(path, device) {
      if (slots.has(path)) throw new Error(`a device is already attached at ${path}`)
      // The mock's port table is global to the process; a path is created once and reused.
      MockBinding.createPort(path, { echo: false, record: false })
      slots.set(path, { device, plugged: true, port: undefined })
    },
    detach(path) {
      const slot = slots.get(path)
      slot?.port?.unplug()
      slots.delete(path)
    },
    unplug(path) {
      const slot = slots.get(path)
      if (!slot) return
      slot.plugged = false
      slot.port?.unplug()
    },
    replug(path) {
      const slot = slots.get(path)
      if (slot) slot.plugged = true
    },
    isOpen: (path) => slots.get(path)?.port !== undefined,
  }
}
