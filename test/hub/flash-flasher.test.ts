// The flash orchestration (hub/flash/flasher.ts) with every part real but the hardware: the real
// bridge hands over and reopens a port on the in-process device binding, the history and the
// image files are real files, B's imageIdentity reads the images. At the hardware edge a
// "flashable board" plays a board that runs whatever image was last written (its hello names
// that image; an image marked BROKEN says nothing at all) and a programmer stands in for avrdude
// and the bootloader (read the flash into a file, write a file onto it). The end-to-end test with
// avrdude, optiboot and simavr is test/hub/flash-e2e.test.ts.
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createDeviceBinding, type Device } from '../../boards/simulator/device-binding.ts'
import { imageIdentity } from '../../bridge/flash/identity.ts'
import { type Bridge, createBridge, type Log } from '../../bridge/index.ts'
import {
  createFlasher,
  type FlashEvent,
  type Flasher,
  HEX_TEXT_MAX,
  type ProgramRequest,
} from '../../hub/flash/flasher.ts'
import { createFlashHistory } from '../../hub/flash/history.ts'
import { createImageStore } from '../../hub/flash/images.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

/** An image of the toy format the programmer below takes: ":" then the flash's bytes as text. */
function image(fw: string | null, proto = 1, extra = ''): string {
  return `:program ${extra}${fw ? `svc-fw:${fw};proto=${proto}\u0000` : ''}end`
}

const parseImage = (text: string) =>
  text.startsWith(':')
    ? { ok: true as const, value: { bytes: new TextEncoder().encode(text.slice(1)) } }
    : { ok: false as const, code: 'BAD_INPUT' as const, error: 'line 1: a record starts with ":"' }

/** A board that runs the image last written to it, and resets (says hello) when its port opens. */
function flashableBoard(first: string, opts: { helloOnOpen: boolean }) {
  let flash = first
  let emit: ((b: string) => void) | undefined
  const running = () => {
    const id = imageIdentity(
      parseImage(flash).ok ? new TextEncoder().encode(flash.slice(1)) : new Uint8Array(),
    )
    return { id, broken: flash.includes('BROKEN') }
  }
  const hello = () => {
    const { id, broken } = running()
    if (broken || !emit) return
    emit(
      `${JSON.stringify({ event: 'hello', board: 'vend1', ...(id ? { fw: `${id.name}/${id.version}`, proto: id.proto } : {}) })}\n`,
    )
  }
  const device: Device = {
    opened(e) {
      emit = (b) => e(b)
      if (opts.helloOnOpen) hello()
    },
    received(chunk) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim() || running().broken) continue
        const c = JSON.parse(line) as { id: number; cmd: string }
        const id = running().id
        const result = c.cmd === 'ping' ? 'pong' : { fw: id ? `${id.name}/${id.version}` : null }
        emit?.(`${JSON.stringify({ id: c.id, ok: true, result })}\n`)
      }
    },
    closed() {
      emit = undefined
    },
  }
  return {
    device,
    get flash() {
      return flash
    },
    set flash(v: string) {
      flash = v
    },
    hello,
    event: () => emit?.('{"event":"message","signal":"coin","text":"1"}\n'),
  }
}

interface World {
  bridge: Bridge
  board: ReturnType<typeof flashableBoard>
  flasher: Flasher
  dir: string
  events: FlashEvent[]
  programmed: { op: string; path: string }[]
  /** What each write answers in turn (null: it works; the queue empty: every write works). */
  programmer: { writes: (string | null)[]; failRead: string | null }
  log: { lines: { level: string; msg: string; obj: object }[] }
}

let n = 0
async function world(
  t: Teardown,
  o: { first?: string; helloOnOpen?: boolean; profile?: boolean; helloTimeoutMs?: number } = {},
): Promise<World> {
  const dir = await tempDir(t)
  const path = `/flash-test/vend1-${process.pid}-${n++}`
  const binding = createDeviceBinding()
  const board = flashableBoard(o.first ?? image('svc-companion/0.1.0'), {
    helloOnOpen: o.helloOnOpen ?? true,
  })
  binding.attach(path, board.device)
  const lines: World['log']['lines'] = []
  const at = (level: string) => (obj: object | string, msg?: string) =>
    void lines.push({
      level,
      msg: typeof obj === 'string' ? obj : (msg ?? ''),
      obj: typeof obj === 'string' ? {} : obj,
    })
  const log: Log = { info: at('info'), warn: at('warn'), error: at('error') }
  const bridge = createBridge({
    boards: [{ name: 'vend1', port: path, heartbeatMs: 0 }],
    publish: async () => undefined,
    binding,
    backoff: { initialMs: 10, maxMs: 50 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  if (o.helloOnOpen ?? true) await waitFor(() => bridge.stats().boards.vend1!.hellos > 0, 'the first hello')
  const programmed: World['programmed'] = []
  const programmer: World['programmer'] = { writes: [], failRead: null }
  const events: FlashEvent[] = []
  const flasher = createFlasher<{ part: string }>({
    boards: ['vend1'],
    profile: () => (o.profile === false ? null : { part: 'm328p' }),
    bridge,
    async program(r: ProgramRequest<{ part: string }>) {
      programmed.push({ op: r.op, path: r.path })
      // The programmer needs the port to itself: the bridge must have let it go.
      if (bridge.stats().boards.vend1!.state !== 'updating')
        return { ok: false, code: 'UNAVAILABLE', error: 'port busy' }
      if (r.op === 'read') {
        if (programmer.failRead)
          return { ok: false, code: 'UPSTREAM_FAILED', error: programmer.failRead, phase: 'reading' }
        r.onProgress({ phase: 'reading', percent: 50 })
        await writeFile(r.path, board.flash)
        r.onProgress({ phase: 'reading', percent: 100 })
        return { ok: true }
      }
      const fail = programmer.writes.shift() ?? null
      if (fail)
        return {
          ok: false,
          code: 'UPSTREAM_FAILED',
          error: fail,
          phase: fail.startsWith('verification') ? 'verifying' : 'writing',
        }
      r.onProgress({ phase: 'writing', percent: 0 })
      board.flash = await readFile(r.path, 'utf8')
      r.onProgress({ phase: 'writing', percent: 100 })
      r.onProgress({ phase: 'verifying', percent: 100 })
      return { ok: true }
    },
    parseImage,
    identity: imageIdentity,
    keepPrevious: async (_b, path) =>
      imageIdentity(new TextEncoder().encode((await readFile(path, 'utf8')).slice(1))),
    history: createFlashHistory({ file: join(dir, 'firmware', 'history.jsonl') }),
    images: createImageStore({ dir: join(dir, 'firmware'), keep: 2 }),
    helloTimeoutMs: o.helloTimeoutMs ?? 1500,
    now: Date.now,
    log,
    onEvent: (e) => events.push(e),
  })
  t.teardown(() => flasher.close())
  return { bridge, board, flasher, dir, events, programmed, programmer, log: { lines } }
}

async function flash(w: World, hex: string, downgrade = false) {
  const mine: FlashEvent[] = []
  const begun = w.flasher.begin(
    { board: 'vend1', hex, downgrade, who: 'alice (local API)', via: 'api' },
    (e) => mine.push(e),
  )
  if (!begun.ok) throw new Error(begun.error)
  const done = await begun.done
  return { begun, done, mine }
}

t.test('a new image: read back, written, hello of the new version: flashed', async (t) => {
  const w = await world(t)
  const old = w.board.flash
  const { begun, done, mine } = await flash(w, image('svc-companion/0.2.0'))
  t.same(begun.identity, { name: 'svc-companion', version: '0.2.0', proto: 1 })
  t.equal(done.outcome, 'flashed')
  t.equal(done.error, null)
  t.same(
    w.programmed.map((p) => p.op),
    ['read', 'write'],
  )
  t.equal(await readFile(done.record.previous!, 'utf8'), old, 'the image read back is kept')
  t.match(done.record, {
    board: 'vend1',
    who: 'alice (local API)',
    via: 'api',
    from: 'svc-companion/0.1.0',
    to: 'svc-companion/0.2.0',
    proto: 1,
    outcome: 'flashed',
    size: image('svc-companion/0.2.0').length - 1,
  })
  t.match(done.record.sha256, /^[0-9a-f]{64}$/)
  t.equal(w.bridge.stats().boards.vend1!.fw, 'svc-companion/0.2.0', 'the bridge heard the new hello')
  t.equal(w.bridge.stats().boards.vend1!.state, 'online')
  const phases = mine.flatMap((e) => (e.kind === 'phase' ? [e.phase] : []))
  t.same(
    [...new Set(phases)],
    ['releasing', 'reading', 'writing', 'verifying', 'reclaiming', 'waiting'],
    'the phases in order',
  )
  t.match(mine.at(-1), { kind: 'done', outcome: 'flashed' })
  t.same(w.events, mine, 'the hub-wide listener heard the same events')
  t.same(
    (await w.flasher.history('vend1')).map((r) => r.outcome),
    ['flashed'],
  )
  const logged = w.log.lines.find((l) => l.msg === 'board flash: flashed')
  t.match(logged?.obj, {
    board: 'vend1',
    who: 'alice (local API)',
    sha256: done.record.sha256,
    outcome: 'flashed',
  })
})

t.test('an image that never says hello: the old image goes back on: rolled back', async (t) => {
  const w = await world(t)
  const old = w.board.flash
  const { done } = await flash(w, image('svc-companion/0.3.0', 1, 'BROKEN '))
  t.equal(done.outcome, 'rolled back')
  t.match(done.error, /^no hello from svc-companion\/0\.3\.0 within 1\.5 s$/)
  t.same(
    w.programmed.map((p) => p.op),
    ['read', 'write', 'write'],
  )
  t.equal(w.programmed[2]!.path, done.record.previous, 'the rollback writes the image read back')
  t.equal(w.board.flash, old, 'the board runs the old image again')
  t.equal(w.bridge.stats().boards.vend1!.fw, 'svc-companion/0.1.0')
  t.equal(w.bridge.stats().boards.vend1!.state, 'online')
  const rollbackPhases = w.events.flatMap((e) => (e.kind === 'phase' && e.rollback ? [e.phase] : []))
  t.same([...new Set(rollbackPhases)], ['releasing', 'writing', 'verifying', 'reclaiming', 'waiting'])
})

t.test('verification fails: rolled back at once, without waiting for a hello', async (t) => {
  const w = await world(t)
  // Only the first write fails; the rollback's write works.
  w.programmer.writes = ['verification error, first mismatch at byte 0x0042']
  const { done } = await flash(w, image('svc-companion/0.2.0'))
  t.equal(done.outcome, 'rolled back')
  t.equal(done.error, 'verifying the image failed: verification error, first mismatch at byte 0x0042')
  t.equal(w.bridge.stats().boards.vend1!.fw, 'svc-companion/0.1.0')
})

t.test('the rollback fails too: rollback failed, naming the file to flash by hand', async (t) => {
  const w = await world(t)
  w.programmer.writes = ['programmer is not responding', 'programmer is not responding']
  const { done } = await flash(w, image('svc-companion/0.2.0'))
  t.equal(done.outcome, 'rollback failed')
  t.match(
    done.error,
    /^writing the image failed: programmer is not responding; writing the previous image back failed too \(programmer is not responding\); the image read before the flash is .*-previous\.hex: flash it again with `svc board flash vend1 .*-previous\.hex`$/,
  )
  t.ok(existsSync(done.record.previous!), 'that file is there')
  await waitFor(() => w.bridge.stats().boards.vend1!.state === 'online', "the port is the bridge's again")
})

t.test('reading the current image fails: nothing written, the port given back: failed', async (t) => {
  const w = await world(t)
  w.programmer.failRead = 'avrdude: stk500_recv(): programmer is not responding'
  const { done } = await flash(w, image('svc-companion/0.2.0'))
  t.equal(done.outcome, 'failed')
  t.match(
    done.error,
    /^reading the current image failed \(avrdude: stk500_recv\(\): programmer is not responding\); nothing was written$/,
  )
  t.same(
    w.programmed.map((p) => p.op),
    ['read'],
  )
  t.equal(done.record.previous, null)
  await waitFor(() => w.bridge.stats().boards.vend1!.state === 'online', 'back online')
})

t.test('a board whose hello went before its port reopened answers capabilities', async (t) => {
  const w = await world(t, { helloOnOpen: false })
  await waitFor(() => w.bridge.stats().boards.vend1!.state === 'online', 'online by its answer to ping')
  const { done } = await flash(w, image('svc-companion/0.2.0'))
  t.equal(done.outcome, 'flashed', 'the firmware named in capabilities is the new one')
  t.equal(done.record.from, null, 'it had named no firmware in a hello')
})

t.test('refusals are answered at once and touch nothing', async (t) => {
  const w = await world(t)
  const ask = (hex: string, board = 'vend1', downgrade = false) =>
    w.flasher.begin({ board, hex, downgrade, who: 'x', via: 'api' })
  t.match(ask(image('a/1'), 'nope'), {
    ok: false,
    code: 'unknown_board',
    status: 404,
    error: /unknown board "nope"/,
  })
  t.match(ask('garbage'), {
    ok: false,
    code: 'bad_image',
    status: 400,
    error: 'image: line 1: a record starts with ":"',
  })
  t.match(ask(':'), { ok: false, code: 'bad_image', status: 400, error: 'image: holds no program bytes' })
  t.match(ask(`:${'x'.repeat(HEX_TEXT_MAX)}`), {
    ok: false,
    code: 'bad_image',
    error: /more than the 1048576 accepted/,
  })

  // The board says it speaks protocol 2: an image of protocol 1 needs downgrade.
  w.board.flash = image('svc-companion/0.4.0', 2)
  w.board.hello()
  await waitFor(() => w.bridge.stats().boards.vend1!.proto === 2, 'the board speaks protocol 2')
  t.match(ask(image('svc-companion/0.3.0', 1)), {
    ok: false,
    code: 'downgrade',
    status: 409,
    error:
      'image svc-companion/0.3.0 speaks line protocol 1, older than the 2 of svc-companion/0.4.0 on vend1: flash it anyway with downgrade (svc board flash --downgrade)',
  })
  t.same(w.programmed, [], 'nothing was programmed')

  const first = ask(image('svc-companion/0.3.0', 1), 'vend1', true)
  t.ok(first.ok, 'with downgrade it starts')
  t.match(ask(image('svc-companion/0.5.0', 2)), { ok: false, code: 'busy', status: 409 })
  if (first.ok) t.equal((await first.done).outcome, 'flashed')
  t.equal(w.flasher.current('vend1'), null, 'nothing under way')
  t.ok(
    w.log.lines.some((l) => l.msg === 'board flash refused' && (l.obj as { code?: string }).code === 'busy'),
  )
})

t.test('no flash profile: 400', async (t) => {
  const w = await world(t, { profile: false })
  t.match(w.flasher.begin({ board: 'vend1', hex: image('a/1'), downgrade: false, who: 'x', via: 'api' }), {
    ok: false,
    code: 'no_profile',
    status: 400,
    error: /^board vend1 has no flash profile: set flash = "uno"/,
  })
})

t.test('a hub stopped mid-flash leaves the flash in the history as interrupted', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'history.jsonl')
  const h = createFlashHistory({ file })
  await h.append({
    id: 'x1',
    board: 'vend1',
    who: 'a',
    via: 'api',
    sha256: '00',
    size: 1,
    from: null,
    to: null,
    proto: null,
    downgrade: false,
    outcome: 'started',
    started: new Date().toISOString(),
    finished: null,
    error: null,
    previous: null,
  })
  const w = await world(t)
  const f = createFlasher({
    ...({} as Parameters<typeof createFlasher>[0]),
    boards: ['vend1'],
    profile: () => ({}),
    bridge: w.bridge,
    history: h,
    log: { info: () => undefined, warn: () => undefined, error: () => undefined },
  })
  t.match(await f.history('vend1'), [
    { id: 'x1', outcome: 'started', error: 'interrupted: the hub stopped during this flash' },
  ])
})

t.test(
  'a rollback waits for the firmware of the image read back, not what the board last said',
  async (t) => {
    const w = await world(t)
    // The board's last hello named other firmware than it runs (a hello lost in a reset, say).
    w.board.flash = image('svc-companion/0.0.9')
    w.board.hello()
    await waitFor(() => w.bridge.stats().boards.vend1!.fw === 'svc-companion/0.0.9', 'the hello heard')
    w.board.flash = image('svc-companion/0.1.0')
    const { done } = await flash(w, image('svc-companion/0.3.0', 1, 'BROKEN '))
    t.equal(done.outcome, 'rolled back', done.error ?? '')
    t.equal(done.record.from, 'svc-companion/0.0.9')
    t.equal(w.bridge.stats().boards.vend1!.fw, 'svc-companion/0.1.0', 'the firmware of the image read back')
  },
)
