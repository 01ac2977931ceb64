// The service manager's end of sd_notify, for tests: a unix datagram socket bound by python3
// (Node cannot bind one) on a path or an abstract name ('@…'), reporting each datagram with the
// PID the kernel credits it to (SO_PASSCRED), as systemd reads it for NotifyAccess=main.
// Stopped by pid when the test ends.
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { commandMissing } from './command-missing.ts'
import type { Teardown } from './tmp.ts'
import { waitFor } from './wait.ts'

const RECEIVER = `
import json, socket, struct, sys
addr = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind('\\0' + addr[1:] if addr.startswith('@') else addr)
print(json.dumps({'ready': True}), flush=True)
while True:
    data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(12))
    pid = None
    for level, kind, cred in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack('iII', cred[:12])[0]
    print(json.dumps({'pid': pid, 'text': data.decode('utf-8', 'replace')}), flush=True)
`

/** One datagram: the PID that sent it and its `KEY=VALUE` lines. */
export interface NotifyMessage {
  pid: number | null
  fields: Record<string, string>
}

export interface NotifyReceiver {
  /** Every datagram so far, in arrival order. */
  messages: NotifyMessage[]
}

/** Null when python3 is there; otherwise why the receiver cannot run. */
export function notifyReceiverMissing(): string | null {
  return commandMissing(
    'python3',
    ['-c', 'import socket; socket.SO_PASSCRED'],
    "python3 with AF_UNIX datagram sockets to play systemd's notify socket",
  )
}

export async function startNotifyReceiver(t: Teardown, address: string): Promise<NotifyReceiver> {
  const proc: ChildProcess = spawn('python3', ['-c', RECEIVER, address], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      process.kill(proc.pid as number, 'SIGKILL')
      await exited
    }
  })
  let ready = false
  let err = ''
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString()
  })
  const messages: NotifyMessage[] = []
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    const m = JSON.parse(line) as { ready?: true; pid?: number | null; text?: string }
    if (m.ready) {
      ready = true
      return
    }
    const fields: Record<string, string> = {}
    for (const l of (m.text ?? '').split('\n')) {
      const eq = l.indexOf('=')
      if (eq > 0) fields[l.slice(0, eq)] = l.slice(eq + 1)
    }
    messages.push({ pid: m.pid ?? null, fields })
  })
  await waitFor(() => {
    if (proc.exitCode !== null) throw new Error(`the notify receiver exited: ${err}`)
    return ready
  }, 'the notify receiver to bind')
  return { messages }
}
