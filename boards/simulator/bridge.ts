// A bridge whose `simulate` boards play in-process: their ports open on the device binding, every
// other port on the given (default: real) binding. The bridge knows nothing of simulation; the
// hub and the tests put the two bindings together here, through BridgeOptions.binding.
import { SerialPort } from 'serialport'
import { type BindingInterface, type Bridge, type BridgeOptions, createBridge } from '../../bridge/index.ts'
import { createSimulatedBoard, type SimulatedBoard } from './board.ts'
import { createDeviceBinding } from './device-binding.ts'

export type SimulatingBridge = Bridge & { simulated(board: string): SimulatedBoard | undefined }

export function createSimulatingBridge(opts: BridgeOptions): SimulatingBridge {
  const played = opts.boards.filter((b) => b.simulate && (b.kind ?? 'serial') === 'serial')
  const real = opts.binding ?? (SerialPort.binding as BindingInterface)
  const devices = createDeviceBinding()
  const paths = new Set(played.map((b) => b.port))
  const binding: BindingInterface = {
    list: () => real.list(),
    open: (o) => (paths.has(o.path) ? devices.open(o) : real.open(o)),
  }
  // createBridge checks every board config (and throws) before anything is attached.
  const bridge = createBridge({ ...opts, binding })
  const sims = new Map<string, SimulatedBoard>()
  for (const cfg of played) {
    const sim = createSimulatedBoard(cfg.name, typeof cfg.simulate === 'object' ? cfg.simulate : {})
    devices.attach(cfg.port, sim)
    sims.set(cfg.name, sim)
  }
  return {
    start: () => bridge.start(),
    send: (board, cmd, args, o) => bridge.send(board, cmd, args, o),
    stats: () => bridge.stats(),
    release: (board) => bridge.release(board),
    reclaim: (board) => bridge.reclaim(board),
    onHello: (fn) => bridge.onHello(fn),
    async close() {
      await bridge.close()
      for (const cfg of played) if (sims.delete(cfg.name)) devices.detach(cfg.port)
    },
    simulated: (board) => sims.get(board),
  }
}
