// The real serialport binding on a real pty pair (socat): when the far end goes away, a read on
// the near end must fail as a disconnection. Unwrapped, bindings-cpp retries the 0-byte read for
// ever and the first test below never ends.
import t from 'tap'
import { SerialPort } from 'serialport'
import type { BindingPortInterface } from '../../bridge/serial/binding-types.ts'
import { HANGUP_MESSAGE, withHangupDetection } from '../../bridge/serial/hangup-binding.ts'
import { tempDir, type Teardown } from '../helpers/tmp.ts'
import { noSocat, startPtyPair, type PtyPair } from './pty.ts'

const binding = withHangupDetection(SerialPort.binding)

async function openPair(
  t: Teardown,
): Promise<{ pair: PtyPair; board: BindingPortInterface; hub: BindingPortInterface }> {
  const pair = await startPtyPair(await tempDir(t))
  const board = await binding.open({ path: pair.board, baudRate: 115200 })
  const hub = await binding.open({ path: pair.hub, baudRate: 115200 })
  t.teardown(async () => {
    for (const p of [board, hub]) if (p.isOpen) await p.close()
    await pair.stop()
  })
  return { pair, board, hub }
}

async function readLine(port: BindingPortInterface): Promise<string> {
  const buf = Buffer.alloc(64)
  let got = ''
  while (!got.endsWith('\n')) {
    const { bytesRead } = await port.read(buf, 0, buf.length)
    got += buf.subarray(0, bytesRead).toString()
  }
  return got
}

const failure = (
  p: Promise<unknown>,
): Promise<Error & { code?: string; disconnect?: boolean; canceled?: boolean }> =>
  p.then(
    () => {
      throw new Error('the read succeeded')
    },
    (err: Error) => err,
  )

t.test('a read after the far end hung up fails with a disconnect error', { skip: noSocat }, async (t) => {
  const { pair, board, hub } = await openPair(t)
  await board.write(Buffer.from('before\n'))
  t.equal(await readLine(hub), 'before\n', 'bytes flow while both ends are there')

  await pair.stop()
  const err = await failure(hub.read(Buffer.alloc(64), 0, 64))
  t.match(err, { message: HANGUP_MESSAGE, code: 'EOF', disconnect: true })
  t.notOk(err.canceled, 'not canceled: SerialPortStream treats it as a disconnection')
  t.equal(hub.isOpen, true, 'the port is left for its owner to close')
  await hub.close()
  t.equal(hub.isOpen, false)
})

t.test('a read waiting for data when the far end goes fails, not canceled', { skip: noSocat }, async (t) => {
  const { pair, hub } = await openPair(t)
  const pending = failure(hub.read(Buffer.alloc(64), 0, 64))
  await pair.stop()
  const err = await pending
  t.ok(err instanceof Error, `rejected: ${err.message}`)
  t.notOk(err.canceled, 'not canceled: SerialPortStream treats it as a disconnection')
})

t.test('closing the port still cancels a waiting read', { skip: noSocat }, async (t) => {
  const { hub } = await openPair(t)
  const pending = failure(hub.read(Buffer.alloc(64), 0, 64))
  await hub.close()
  t.match(await pending, { canceled: true })
})

t.test('a port without a file descriptor (the mock binding) is passed through as it is', async (t) => {
  const { SerialPortMock } = await import('serialport')
  SerialPortMock.binding.createPort('/dev/hangup-mock', { echo: true })
  t.teardown(() => SerialPortMock.binding.reset())
  const port = await withHangupDetection(SerialPortMock.binding).open({
    path: '/dev/hangup-mock',
    baudRate: 9600,
  })
  t.equal(port.constructor.name, 'MockPortBinding')
  await port.write(Buffer.from('echo\n'))
  t.equal(await readLine(port), 'echo\n')
  await port.close()
})
