// `svc board flash` end to end, every part real: the companion sketch built twice for an Uno with
// avr-gcc (versions 0.2.0 and 0.3.0, the build's SVC_FW_VERSION), run in simavr on an ATmega328P
// with Debian's optiboot in its boot section (boards/firmware/simavr), the hub daemon in-process
// with its embedded broker, bridge, local API and flasher, avrdude 7.1 through optiboot, and the
// CLI. The board's reset line is its flash profile's reset command (SIGUSR1 to the emulator).
// 1. The new build is written: the board says hello as 0.3.0 and its events flow again; how long
//    they stopped is printed (from the port's release to the first event after the new hello).
// 2. A build that never says hello (a bare loop) is written: the hub writes back the image it read
//    first, and 0.3.0 answers again: `rolled back`.
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import mqtt from 'mqtt'
import t from 'tap'
import {
  buildHarness,
  type EmulatedUno,
  emulatedUnoMissing,
  startEmulatedUno,
} from '../../boards/firmware/simavr/emulated-uno.ts'
import { BOOT_START, optibootForUno, optibootMissing } from '../../boards/firmware/simavr/optiboot.ts'
import { buildUno } from '../../boards/firmware/uno-build.ts'
import { avrdudeMissing } from '../../bridge/flash/avrdude.ts'
import { parseIntelHex } from '../../bridge/flash/intel-hex.ts'
import { resolveConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { silentLog } from '../../hub/log.ts'
import { svcCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const missing = emulatedUnoMissing() || optibootMissing() || avrdudeMissing()
if (missing) t.comment(`flash end-to-end test skipped: ${missing}`)
const skip = missing ? `${missing}: the flash end-to-end test needs it` : false

const HELLO_TIMEOUT_MS = 8000

async function imageOf(path: string): Promise<Uint8Array> {
  const r = parseIntelHex(await readFile(path, 'utf8'), { where: path })
  if (!r.ok) throw new Error(r.error)
  return r.value.bytes
}

/** The first address where `got` differs from `want` (from `at`), or 'same'. */
function compare(got: Uint8Array, want: Uint8Array, at = 0): string {
  for (let i = at; i < want.length; i++) if (got[i] !== want[i]) return `differs at 0x${i.toString(16)}`
  return 'same'
}

/** A program that runs and never prints: built with avr-gcc, as small as a sketch can be. */
async function loopImage(dir: string): Promise<string> {
  const run = promisify(execFile)
  await writeFile(join(dir, 'loop.c'), 'int main(void) {\n  for (;;) {\n  }\n}\n')
  await run('avr-gcc', ['-mmcu=atmega328p', '-Os', '-o', join(dir, 'loop.elf'), join(dir, 'loop.c')])
  await run('avr-objcopy', ['-O', 'ihex', '-R', '.eeprom', join(dir, 'loop.elf'), join(dir, 'loop.hex')])
  return join(dir, 'loop.hex')
}

interface Heard {
  topic: string
  payload: string
  at: number
}

t.test(
  'svc board flash on an emulated Uno through optiboot: flashed, then rolled back',
  { skip },
  async (t) => {
    const dir = await tempDir(t, 'svc-flash-e2e-')
    const [old, next] = await Promise.all([
      buildUno(join(dir, 'old'), { defines: ['SVC_FW_VERSION="0.2.0"'] }),
      buildUno(join(dir, 'new'), { defines: ['SVC_FW_VERSION="0.3.0"'] }),
    ])
    if (!old.ok) throw new Error(old.error)
    if (!next.ok) throw new Error(next.error)
    const broken = await loopImage(dir)
    const boot = await optibootForUno(dir)
    if (!boot.ok) throw new Error(boot.error)
    if (boot.value.note) t.comment(boot.value.note)
    const harness = await buildHarness(dir)
    if (!harness.ok) throw new Error(harness.error)

    const link = join(dir, 'uno')
    const uno: EmulatedUno = await startEmulatedUno({
      harness: harness.exe,
      elf: old.build.hex,
      link,
      boot: boot.value.hex,
      paused: true,
    })
    t.teardown(() => uno.kill())

    const home = join(dir, 'home')
    const env = { ...process.env, SVC_HOME: home }
    const cfg = resolveConfig(
      {
        hub: { sops_dir: join(home, 'sops'), data_dir: join(home, 'data'), log_level: 'silent' },
        broker: { port: 0 },
        api: { port: 0 },
        console: { enabled: false },
        webhook: { enabled: false },
        flash: { hello_timeout_ms: HELLO_TIMEOUT_MS },
        boards: [
          {
            name: 'vend1',
            port: link,
            flash: { profile: 'uno', reset: { kind: 'command', argv: uno.resetArgv } },
          },
        ],
      },
      null,
      env,
    )
    if (!cfg.ok) throw new Error(cfg.error)
    const hub = await startHub(cfg.config, silentLog, realParts(env, cfg.config))
    t.teardown(() => hub.close())
    const stats = () => hub.bridge!.stats().boards.vend1!

    const heard: Heard[] = []
    const watcher = await mqtt.connectAsync(hub.brokerUrl, { reconnectPeriod: 0 })
    t.teardown(() => watcher.endAsync(true))
    watcher.on('message', (topic, p) => heard.push({ topic, payload: p.toString(), at: performance.now() }))
    await watcher.subscribeAsync(['boards/vend1/coin', 'boards/vend1/availability', 'boards/vend1/info'], {
      qos: 1,
    })

    await uno.ask('run', 'running')
    await waitFor(() => stats().fw === 'svc-companion/0.2.0', 'the old build says hello')
    await waitFor(() => stats().state === 'online', 'vend1 online')

    // A coin every 100 ms: the events a flash interrupts. Held from the start of a flash until the
    // new firmware's hello (no event could get through meanwhile: the port is the programmer's, or
    // the board is in its bootloader), so that the reset after the flash cuts no event's line in two.
    let pulsing = true
    let held = false
    let heldFor = ''
    const pulses = (async () => {
      while (pulsing) {
        if (!held) await uno.ask('pulse 2 20', 'pulse 2').catch(() => undefined)
        await sleep(100)
      }
    })()
    watcher.on('message', (topic, p) => {
      if (topic === 'boards/vend1/info' && held && heldFor !== '' && JSON.parse(p.toString()).fw !== heldFor)
        held = false
    })
    t.teardown(async () => {
      pulsing = false
      await pulses
    })
    const coins = () => heard.filter((h) => h.topic === 'boards/vend1/coin')
    await waitFor(() => coins().length >= 3, 'coins flowing')
    const svc = svcCli(env, dir)

    await t.test('a new build: flashed, its hello heard, events flow again', async (t) => {
      const from = heard.length
      heldFor = 'svc-companion/0.2.0'
      held = true
      const r = await svc('board', 'flash', 'vend1', next.build.hex)
      t.equal(r.code, 0, r.err)
      t.match(
        r.out,
        /^flashed vend1: svc-companion\/0\.2\.0 → svc-companion\/0\.3\.0 \(sha256 [0-9a-f]{12}…, \d+ bytes\) in [\d.]+ s\n$/,
      )
      t.match(
        r.err,
        /flash vend1: releasing\n[\s\S]*flash vend1: reading[\s\S]*flash vend1: writing[\s\S]*flash vend1: verifying[\s\S]*flash vend1: waiting/,
      )
      await waitFor(() => stats().fw === 'svc-companion/0.3.0', 'the bridge has the new hello')
      const after = heard.slice(from)
      const released = after.find((h) => h.topic === 'boards/vend1/availability' && h.payload === 'offline')
      const hello = after.find(
        (h) => h.topic === 'boards/vend1/info' && JSON.parse(h.payload).fw === 'svc-companion/0.3.0',
      )
      t.ok(released, 'availability went offline when the port was released')
      t.ok(hello, 'boards/vend1/info carries the new hello')
      t.match(JSON.parse(hello!.payload), {
        name: 'vend1',
        fw: 'svc-companion/0.3.0',
        version: '0.3.0',
        proto: 1,
      })
      const first = await waitFor(
        () => heard.find((h) => h.topic === 'boards/vend1/coin' && h.at > hello!.at),
        'a coin event after the new hello',
      )
      const lastBefore = heard
        .slice(0, heard.indexOf(released!))
        .filter((h) => h.topic === 'boards/vend1/coin')
        .at(-1)
      t.comment(
        `events stopped for ${((first.at - released!.at) / 1000).toFixed(2)} s from the release to the first event after the new hello ` +
          `(the new hello came ${((hello!.at - released!.at) / 1000).toFixed(2)} s after the release; coins every ~100 ms, held from the flash's start to that hello; ` +
          `${lastBefore ? ((first.at - lastBefore.at) / 1000).toFixed(2) : '?'} s between the last event before and the first after)`,
      )
      t.equal(stats().state, 'online')
      t.same(await hub.bridge!.send('vend1', 'ping', {}, { timeoutMs: 2000 }), { ok: true, result: 'pong' })

      const flash = await uno.dumpFlash(join(dir, 'flash-1.bin'))
      t.equal(compare(flash, await imageOf(next.build.hex)), 'same', 'the emulator holds the new build')
      t.equal(compare(flash, await imageOf(boot.value.hex), BOOT_START), 'same', 'and optiboot, untouched')
      const h = JSON.parse((await svc('board', 'flash-history', 'vend1', '--json')).out) as {
        flashes: { outcome: string; previous: string; from: string; to: string }[]
      }
      t.match(h.flashes[0], { outcome: 'flashed', from: 'svc-companion/0.2.0', to: 'svc-companion/0.3.0' })
      const kept = await imageOf(h.flashes[0]!.previous)
      const oldImage = await imageOf(old.build.hex)
      t.equal(kept.length <= BOOT_START, true, 'the image kept stops below the bootloader')
      t.equal(compare(kept, oldImage.subarray(0, kept.length)), 'same', 'the image kept is the old build')
    })

    await t.test('a build that never says hello: the kept image goes back on, rolled back', async (t) => {
      heldFor = ''
      held = true
      const r = await svc('board', 'flash', 'vend1', broken)
      held = false
      t.equal(r.code, 1, 'a rollback exits 1')
      t.match(
        r.err,
        new RegExp(
          `^rolled back vend1: no hello within ${HELLO_TIMEOUT_MS / 1000} s; it runs svc-companion/0\\.3\\.0 again`,
          'm',
        ),
      )
      t.match(r.err, /flash vend1: rollback: writing/)
      await waitFor(() => stats().state === 'online', 'online again')
      t.equal(stats().fw, 'svc-companion/0.3.0', 'the board named the old firmware again')
      const caps = await svc('board', 'send', 'vend1', 'capabilities', '--json')
      t.equal(caps.code, 0)
      t.match(JSON.parse(caps.out), { result: { fw: 'svc-companion/0.3.0' } })
      const n = coins().length
      await waitFor(() => coins().length > n + 2, 'events flow again')
      const flash = await uno.dumpFlash(join(dir, 'flash-2.bin'))
      t.equal(compare(flash, await imageOf(next.build.hex)), 'same', 'the emulator holds 0.3.0 again')
      t.equal(compare(flash, await imageOf(boot.value.hex), BOOT_START), 'same', 'optiboot untouched')
      const h = JSON.parse((await svc('board', 'flash-history', 'vend1', '--json')).out) as {
        flashes: { outcome: string; error: string; to: string | null }[]
      }
      t.match(
        h.flashes.map((f) => f.outcome),
        ['rolled back', 'flashed'],
      )
      t.equal(h.flashes[0]!.to, null, 'the loop carries no identity')
    })
  },
)
