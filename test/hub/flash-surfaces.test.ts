// `svc board flash` on every surface of a real in-process hub (embedded broker with admin and
// reader accounts, local API, console, real bridge on a socat pty with a simulated board): who
// may flash, what bad input gets, the statuses, the NDJSON progress, the CLI's argument errors and
// exit codes, the console's upload → confirm → flash with its CSRF checks, the MQTT request and
// its answers, and the history each leaves with who asked. The programmer is a stand-in avrdude
// (a script at the hardware edge that talks to no bootloader and fails after a moment), so every
// flash here ends `failed` with nothing written; flashing for real is test/hub/flash-e2e.test.ts.
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt from 'mqtt'
import t from 'tap'
import { runSimulatorOnPort } from '../../boards/simulator/on-port.ts'
import { toIntelHex } from '../../bridge/flash/intel-hex.ts'
import { accountsPath } from '../../hub/broker/accounts-file.ts'
import { resolveConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { readApiToken } from '../../hub/api/token.ts'
import { svcPaths } from '../../hub/paths.ts'
import { noSocat, startPtyPair } from '../bridge/pty.ts'
import { svcCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { recordingLog, writeAccounts } from './broker-auth-helpers.ts'
import { ConsoleClient } from './console-helpers.ts'

/** A small valid image naming svc-companion/0.3.0, protocol 1 (what the hub reads before writing). */
const IMAGE = toIntelHex(
  new TextEncoder().encode('\u000c\u0094\u0034\u0000svc-fw:svc-companion/0.3.0;proto=1\u0000'),
)

t.test('board flash through the API, the CLI, the console and MQTT', { skip: noSocat }, async (t) => {
  const home = await tempDir(t, 'svc-flash-home-')
  const env = { ...process.env, SVC_HOME: home }
  const pair = await startPtyPair(home)
  t.teardown(() => pair.stop())
  const sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0 })
  if (!sim.ok) throw new Error(sim.error)
  t.teardown(() => sim.sim.stop())
  // avrdude as the hub runs it, standing in for one that cannot reach a bootloader.
  const avrdude = join(home, 'avrdude')
  await writeFile(
    avrdude,
    '#!/bin/sh\nsleep 0.5\necho "avrdude: stk500_recv(): programmer is not responding" >&2\necho "avrdude: stk500_getsync() attempt 1 of 1: not in sync: resp=0x7b" >&2\nexit 1\n',
  )
  await chmod(avrdude, 0o755)
  const cfg = resolveConfig(
    {
      hub: { sops_dir: join(home, 'sops'), data_dir: join(home, 'data'), log_level: 'silent' },
      broker: { port: 0 },
      api: { port: 0 },
      console: { port: 0 },
      webhook: { enabled: false },
      flash: { avrdude, hello_timeout_ms: 2000 },
      boards: [
        { name: 'vend1', port: pair.hub, heartbeat_ms: 0, flash: 'uno' },
        { name: 'vend2', port: join(home, 'no-such-port'), heartbeat_ms: 0 },
      ],
    },
    null,
    env,
  )
  if (!cfg.ok) throw new Error(cfg.error)
  await writeAccounts(accountsPath(cfg.config.dataDir), [
    { name: 'ops', role: 'admin', password: 'ops-secret-1' },
    { name: 'watch', role: 'reader', password: 'watch-secret-1' },
  ])
  const log = recordingLog()
  const hub = await startHub(cfg.config, log, realParts(env, cfg.config))
  t.teardown(() => hub.close())
  const state = () => hub.bridge!.stats().boards.vend1!.state
  await waitFor(() => state() === 'online', 'vend1 online')
  // Its first hello went out before the bridge opened the port; this one says what it runs.
  sim.sim.board.emitRaw('{"event":"hello","board":"vend1","fw":"svc-companion/0.2.0","proto":1}\n')
  await waitFor(() => hub.bridge!.stats().boards.vend1!.fw === 'svc-companion/0.2.0', 'the hello heard')
  const token = await readApiToken(svcPaths(env).apiToken)
  if (!token.ok) throw new Error(token.error)
  const api = (path: string, init: RequestInit = {}, auth = true) =>
    fetch(hub.apiUrl + path, {
      ...init,
      headers: {
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...(auth ? { authorization: `Bearer ${token.value}` } : {}),
      },
    })
  const post = (board: string, body: unknown, auth = true) =>
    api(`/boards/${board}/flash`, { method: 'POST', body: JSON.stringify(body) }, auth)
  const ndjson = async (res: Response) =>
    (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)

  await t.test('local API: refusals with their status, nothing touched', async (t) => {
    t.equal((await post('vend1', { hex: IMAGE }, false)).status, 401, 'no token')
    t.equal((await api('/boards/vend1/flash-history', {}, false)).status, 401)
    let r = await post('nope', { hex: IMAGE })
    t.equal(r.status, 404)
    t.match(await r.json(), { error: /unknown board "nope"/, code: 'unknown_board' })
    r = await post('vend2', { hex: IMAGE })
    t.equal(r.status, 400)
    t.match(await r.json(), { error: /^board vend2 has no flash profile/, code: 'no_profile' })
    r = await post('vend1', { hex: ':00000001FE\n' })
    t.equal(r.status, 400)
    t.same(await r.json(), { error: 'image: Intel HEX line 1: bad checksum', code: 'bad_image' })
    r = await post('vend1', { hex: toIntelHex(new Uint8Array(32_300).fill(1)) })
    t.equal(r.status, 400)
    t.match(await r.json(), { error: /past the end.*vend1 takes at most 32256 bytes below its bootloader/ })
    r = await post('vend1', { hex: IMAGE, reboot: true })
    t.equal(r.status, 400)
    t.match(await r.json(), { error: /"reboot"/ })
    r = await post('vend1', { downgrade: true })
    t.equal(r.status, 400)
    t.match(await r.json(), { error: /hex/ })
    r = await api('/boards/nope/flash-history')
    t.equal(r.status, 404)
    t.equal(state(), 'online', 'the board never left')
  })

  await t.test('local API: a flash streams its progress; a second one meanwhile is busy (409)', async (t) => {
    const first = post('vend1', { hex: IMAGE, by: 'alice' })
    await waitFor(() => state() === 'updating', 'the port handed over')
    const second = await post('vend1', { hex: IMAGE })
    t.equal(second.status, 409)
    t.match(await second.json(), {
      code: 'busy',
      error: 'board vend1 is being flashed already; wait for that flash to end',
    })
    const res = await first
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^application\/x-ndjson/)
    const lines = await ndjson(res)
    t.match(lines[0], {
      started: true,
      board: 'vend1',
      sha256: /^[0-9a-f]{64}$/,
      identity: { name: 'svc-companion', version: '0.3.0', proto: 1 },
    })
    t.match(lines[1], { phase: 'releasing', rollback: false })
    t.match(lines[2], { phase: 'reading' })
    const done = lines.at(-1)!
    t.match(done, {
      done: true,
      board: 'vend1',
      outcome: 'failed',
      error:
        /^reading the current image failed \(avrdude failed while connecting to the bootloader: .*not in sync.*\); nothing was written$/,
      record: {
        who: 'alice (local API)',
        via: 'api',
        to: 'svc-companion/0.3.0',
        from: 'svc-companion/0.2.0',
      },
    })
    await waitFor(() => state() === 'online', "the board is the bridge's again")
    const h = (await (await api('/boards/vend1/flash-history')).json()) as {
      flashes: { outcome: string; who: string }[]
    }
    t.match(h.flashes, [{ outcome: 'failed', who: 'alice (local API)' }])
    const line = log.lines.find((l) => l.msg === 'board flash: failed')
    t.match(line?.obj, {
      board: 'vend1',
      who: 'alice (local API)',
      sha256: done.record && (done.record as { sha256: string }).sha256,
      outcome: 'failed',
    })
  })

  await t.test('CLI: argument errors exit 2, refusals and failures exit 1', async (t) => {
    const svc = svcCli(env, home)
    let r = await svc('board', 'flash')
    t.equal(r.code, 2)
    t.match(r.err, /board and image are required/)
    r = await svc('board', 'flash', 'vend 1', 'x.hex')
    t.equal(r.code, 2)
    t.match(r.err, /board: must match/)
    r = await svc('board', 'flash', 'vend1', 'missing.hex')
    t.equal(r.code, 2)
    t.match(r.err, /image: cannot read missing\.hex: ENOENT/)
    await writeFile(join(home, 'notes.txt'), 'hello\n')
    r = await svc('board', 'flash', 'vend1', 'notes.txt')
    t.equal(r.code, 2)
    t.match(r.err, /is not Intel HEX/)
    r = await svc('board', 'flash', 'vend1', 'x.hex', 'y.hex')
    t.equal(r.code, 2)
    r = await svc('board', 'flash', 'vend1', 'x.hex', '--force')
    t.equal(r.code, 2)
    await writeFile(join(home, 'new.hex'), IMAGE)
    r = await svc('board', 'flash', 'vend2', 'new.hex')
    t.equal(r.code, 1)
    t.match(r.err, /board vend2 has no flash profile/)
    r = await svc('board', 'flash', 'vend1', 'new.hex')
    t.equal(r.code, 1, 'a failed flash exits 1')
    t.match(r.err, /^flash vend1: releasing\n/m, 'plain progress lines when stderr is not a terminal')
    t.match(r.err, /^failed vend1: reading the current image failed/m)
    await waitFor(() => state() === 'online', 'back online')
    r = await svc('board', 'flash', 'vend1', 'new.hex', '--json')
    t.equal(r.code, 1)
    t.match(JSON.parse(r.out), { board: 'vend1', outcome: 'failed', record: { via: 'api', size: 40 } })
    await waitFor(() => state() === 'online', 'back online')
    r = await svc('board', 'flash-history', 'vend1')
    t.equal(r.code, 0)
    t.match(r.out, /^STARTED +OUTCOME +FROM +TO +SHA256 +WHO\n/)
    t.match(r.out, /failed +svc-companion\/0\.2\.0 +svc-companion\/0\.3\.0 /)
    r = await svc('board', 'flash-history', 'vend1', '--json', '--limit', '2')
    t.equal(JSON.parse(r.out).flashes.length, 2)
    r = await svc('board', 'flash-history', 'nope')
    t.equal(r.code, 1)
    r = await svc('board', 'flash-history')
    t.equal(r.code, 2)
  })

  await t.test('console: upload, confirm, flash; forged and stale posts refused', async (t) => {
    const c = new ConsoleClient(hub.console!.url)
    t.equal((await c.signInWithLink(hub.console!.loginLink())).status, 200)
    const csrf = await c.csrf()
    const upload = (text: string, o: { csrf?: string; origin?: string } = {}) => {
      const form = new FormData()
      if (o.csrf !== '') form.set('_csrf', o.csrf ?? csrf)
      form.set('image', new Blob([text]), 'new.hex')
      return fetch(`${c.url}/boards/vend1/flash`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: c.cookie, origin: o.origin ?? c.origin },
        body: form,
      })
    }
    let page = await (await c.get('/boards/vend1/flash')).text()
    t.match(page, /<h1>Firmware of vend1<\/h1>/)
    t.match(page, /enctype="multipart\/form-data"/)
    t.match(page, /<table class="flashes">/, 'the history so far')
    t.match(await (await c.get('/boards/vend2/flash')).text(), /has no flash profile/)
    t.equal((await c.get('/boards/nope/flash')).status, 404)
    t.match(
      await (await c.get('/boards')).text(),
      /href="\/boards\/vend1\/flash"/,
      'linked from the boards page',
    )

    t.equal((await upload(IMAGE, { csrf: '' })).status, 403, 'no CSRF token')
    t.equal((await upload(IMAGE, { origin: 'http://evil.example' })).status, 403, 'another origin')
    let r = await upload(':zz\n')
    t.equal(r.status, 400)
    t.match(await r.text(), /image: Intel HEX line 1: not an Intel HEX record/)

    r = await upload(IMAGE)
    t.equal(r.status, 200)
    page = await r.text()
    t.match(page, /<h1>Flash vend1\?<\/h1>/)
    t.match(page, /<code>svc-companion\/0\.3\.0<\/code> \(line protocol 1\)/)
    t.match(page, /<code>svc-companion\/0\.2\.0<\/code>/, 'what the board runs now')
    const token = /name="upload" value="([0-9a-f]+)"/.exec(page)?.[1]
    t.ok(token, 'the upload waits for confirmation')
    t.equal(state(), 'online', 'nothing flashed before the confirmation')
    t.equal(
      (await c.post('/boards/vend1/flash/confirm', { upload: token! })).status,
      403,
      'confirm without CSRF',
    )
    r = await c.post('/boards/vend1/flash/confirm', { _csrf: csrf, upload: 'f'.repeat(32) })
    t.equal(r.status, 409)
    t.match(await r.text(), /That upload is gone/)
    r = await c.post('/boards/vend1/flash/confirm', { _csrf: csrf, upload: token! })
    t.equal(r.status, 303)
    t.equal(r.headers.get('location'), '/boards/vend1/flash')
    const ended = async () => {
      const h = (await (await api('/boards/vend1/flash-history')).json()) as {
        flashes: { who: string; outcome: string }[]
      }
      return h.flashes.find((f) => f.who === 'owner (console)' && f.outcome !== 'started')
    }
    t.match(await waitFor(ended, 'the console flash to end'), { outcome: 'failed' })
    page = await (await c.get('/boards/vend1/flash')).text()
    t.match(page, /<td class="hide-narrow">owner \(console\)<\/td>/, 'in the history table, with who')
    await waitFor(() => state() === 'online', 'back online')
    r = await c.post('/boards/vend1/flash/confirm', { _csrf: csrf, upload: token! })
    t.equal(r.status, 409, 'an upload flashes once')
  })

  await t.test(
    'MQTT: admins only; bad requests answered; progress and outcome on the reply topic',
    async (t) => {
      const watch = await mqtt.connectAsync(hub.brokerUrl, {
        reconnectPeriod: 0,
        username: 'watch',
        password: 'watch-secret-1',
      })
      t.teardown(() => watch.endAsync(true))
      const closed = new Promise<void>((r) => watch.once('close', () => r()))
      watch.publish('svc/boards/vend1/flash', JSON.stringify({ hex: IMAGE }), { qos: 1 })
      await closed
      t.pass('a reader publishing a flash request is disconnected (MQTT-3.3.5-2)')
      t.ok(
        log.lines.some((l) => /may not flash board firmware/.test(String(l.obj.why))),
        'the refusal is logged',
      )

      const ops = await mqtt.connectAsync(hub.brokerUrl, {
        reconnectPeriod: 0,
        username: 'ops',
        password: 'ops-secret-1',
      })
      t.teardown(() => ops.endAsync(true))
      const got: Record<string, unknown>[] = []
      ops.on('message', (_topic, p) => got.push(JSON.parse(p.toString())))
      await ops.subscribeAsync(['svc/boards/vend1/flash/reply', 'ops/answers'], { qos: 1 })
      const ask = async (payload: string, until: (m: Record<string, unknown>) => boolean) => {
        const n = got.length
        await ops.publishAsync('svc/boards/vend1/flash', payload, { qos: 1 })
        return waitFor(() => got.slice(n).find(until), `an answer to ${payload.slice(0, 40)}`)
      }
      t.match(await ask('not json', (m) => m.ok === false), {
        id: null,
        ok: false,
        code: 'bad_request',
        error: /^payload: not JSON/,
      })
      t.match(await ask('{"id":"a","hex":""}', (m) => m.id === 'a'), { ok: false, error: /^hex: / })
      t.match(await ask('{"id":"b","hex":"x","force":1}', (m) => m.id === 'b'), {
        ok: false,
        error: 'force: unknown field',
      })
      t.match(
        await ask(JSON.stringify({ id: 'c', hex: IMAGE, reply_to: 'svc/hub/state' }), (m) => m.id === 'c'),
        {
          ok: false,
          error: /^reply_to: svc\/hub\/state: svc\/ topics are the hub's/,
        },
      )
      t.match(await ask(JSON.stringify({ id: 'd', hex: ':00000001FE' }), (m) => m.id === 'd'), {
        ok: false,
        code: 'bad_image',
        error: 'image: Intel HEX line 1: bad checksum',
      })
      const done = await ask(
        JSON.stringify({ id: 7, hex: IMAGE, reply_to: 'ops/answers' }),
        (m) => m.id === 7 && m.done === true,
      )
      t.match(done, { outcome: 'failed', record: { who: 'ops (mqtt)', via: 'mqtt' } })
      const mine = got.filter((m) => m.id === 7)
      t.match(mine[0], { started: true, identity: { version: '0.3.0' } })
      t.ok(
        mine.some((m) => m.phase === 'reading'),
        'progress on the reply topic',
      )
      await waitFor(() => state() === 'online', 'back online')
      const before = got.length
      await ops.publishAsync('svc/boards/vend1/flash', JSON.stringify({ id: 'r', hex: IMAGE }), {
        qos: 1,
        retain: true,
      })
      t.teardown(() => ops.publishAsync('svc/boards/vend1/flash', '', { qos: 1, retain: true }))
      await waitFor(
        () => log.lines.some((l) => /retained flash request ignored/.test(l.msg)),
        'the retained request noticed',
      )
      t.equal(got.length, before, 'a retained request is not run or answered')
      t.equal(state(), 'online')
    },
  )

  await t.test('every flash is in the history with who asked', async (t) => {
    const h = (await (await api('/boards/vend1/flash-history?limit=50')).json()) as {
      flashes: { who: string; via: string }[]
    }
    const who = new Set(h.flashes.map((f) => `${f.via}:${f.who}`))
    t.ok(who.has('api:alice (local API)'))
    t.ok(who.has('console:owner (console)'))
    t.ok(who.has('mqtt:ops (mqtt)'))
    t.ok(
      [...who].some((w) => /^api:.+ \(local API\)$/.test(w) && w !== 'api:alice (local API)'),
      'the CLI names the user',
    )
  })
})
