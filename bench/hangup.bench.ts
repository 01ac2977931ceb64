// What a hung-up serial port costs the hub: a real pty pair (socat) whose far end goes away while
// the near end reads. Each variant runs in its own child process, because the port as shipped
// never stops reading and would colour whatever is measured after it. The baseline is the same
// child, the same second, with no port at all.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SerialPort } from 'serialport'
import { haveSocat, startPtyPair } from '../boards/simulator/pty-pair.ts'
import { withHangupDetection } from '../bridge/serial/hangup-binding.ts'

type Variant = 'idle' | 'shipped' | 'wrapped'
const WINDOW_MS = 1000

async function child(variant: Variant): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-hangup-'))
  let outcome = 'no port'
  let settledMs = NaN
  if (variant !== 'idle') {
    const binding = variant === 'shipped' ? SerialPort.binding : withHangupDetection(SerialPort.binding)
    const pair = await startPtyPair(dir)
    const port = await binding.open({ path: pair.hub, baudRate: 115200 })
    await pair.stop()
    const t0 = performance.now()
    outcome = 'still reading'
    port.read(Buffer.alloc(64), 0, 64).then(
      () => (outcome = 'returned bytes'),
      (err: Error & { code?: string }) => {
        outcome = `failed (${err.code ?? err.message})`
        settledMs = performance.now() - t0
      },
    )
  }
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await new Promise((r) => setTimeout(r, WINDOW_MS))
  const c = process.cpuUsage(c0)
  const cpu = ((c.user + c.system) / 1000 / (performance.now() - t0)) * 100
  rmSync(dir, { recursive: true, force: true })
  process.stdout.write(JSON.stringify({ outcome, settledMs, cpu }) + '\n')
  process.exit(0)
}

function measure(variant: Variant): { outcome: string; settledMs: number; cpu: number } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), variant], {
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`hangup bench child ${variant} failed: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop()!)
}

const arg = process.argv[2] as Variant | undefined
if (arg) {
  await child(arg)
} else if (!haveSocat()) {
  console.log(
    'hangup: skipped, socat is not installed (apt-get install socat): the bench needs a real pty pair',
  )
} else {
  const idle = measure('idle')
  const shipped = measure('shipped')
  const wrapped = measure('wrapped')
  const pct = (n: number) => `${n.toFixed(0)}% of a core`
  console.log(
    `hung-up pty, CPU over the ${WINDOW_MS} ms after the far end went away (one child process each):`,
  )
  console.log(`  baseline, no port:                     ${pct(idle.cpu)}`)
  console.log(`  @serialport/bindings-cpp as shipped:   ${pct(shipped.cpu)}; the read is ${shipped.outcome}`)
  console.log(
    `  withHangupDetection (what svc uses):   ${pct(wrapped.cpu)}; the read ${wrapped.outcome} after ${wrapped.settledMs.toFixed(1)} ms`,
  )
}
