// The console's Boards page on a real hub with simulated boards: availability, last event and
// counters; a command sent from the form reaches the board and its answer is shown; a bad
// command, bad arguments, an unknown board and forged posts are refused with nothing sent; a
// board's own error comes back as the board said it.
import t from 'tap'
import { encodeMessage } from '../../bridge/codec/index.ts'
import type { Teardown } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { ConsoleClient, startConsoleHub } from './console-helpers.ts'

async function signedIn(t: Teardown) {
  const ch = await startConsoleHub(t, { boards: ['vend1', 'vend2'] })
  const c = new ConsoleClient(ch.url)
  const res = await c.signInWithLink(ch.hub.console!.loginLink())
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status}`)
  await waitFor(
    () => ['vend1', 'vend2'].every((b) => ch.bridge()!.stats().boards[b]?.state === 'online'),
    'both boards online',
  )
  return { ...ch, c, csrf: await c.csrf() }
}

t.test('each board: online, last event, counters; a board text is escaped', async (t) => {
  const ch = await signedIn(t)
  const sim = ch.bridge()!.simulated('vend1')!
  sim.emitEvents(3)
  sim.emitRaw(encodeMessage('note', '<img src=x onerror=alert(1)>'))
  await waitFor(() => ch.bridge()!.stats().boards.vend1!.published >= 4, 'four events published')
  await waitFor(
    async () => (await (await ch.c.get('/boards')).text()).includes('<code>note</code>'),
    'the last event on the page',
  )
  const page = await (await ch.c.get('/boards')).text()
  t.match(page, /<li class="card" data-board="vend1" data-availability="online">/)
  t.match(page, /<li class="card" data-board="vend2" data-availability="online">/)
  t.match(page, /<strong data-counter="events">4<\/strong>/, 'the bridge counted four events for vend1')
  t.match(
    page,
    /serial · firmware <code data-firmware="svc-companion">svc-companion<\/code> <span data-version="0.2.0">0.2.0<\/span> · protocol <span data-proto="1">1<\/span><\/p>/,
    'the firmware its hello named: name, version, protocol',
  )
  t.match(page, /<code class="payload">&lt;img src=x onerror=alert\(1\)&gt;<\/code>/, 'escaped')
  t.notMatch(page, /<img/)
  t.match(
    page,
    /<ul id="board-events"[^>]*><li><time[^>]*>[^<]+<\/time> <strong>vend1<\/strong> <code>note<\/code>/,
  )
  t.match(page, /<script type="module" src="\/assets\/boards.js"><\/script>/, 'the live feed, same origin')
  const js = await ch.c.get('/assets/boards.js')
  t.equal(js.status, 200)
  t.match(await js.text(), /\/events\?topics=board-event/)
})

t.test('a board on a protocol the hub does not speak is flagged on its card', async (t) => {
  const ch = await signedIn(t)
  const hellos = ch.bridge()!.stats().boards.vend2!.hellos
  ch.bridge()!
    .simulated('vend2')!
    .emitRaw('{"event":"hello","board":"vend2","fw":"svc-companion/0.3.0","proto":2}\n')
  await waitFor(() => ch.bridge()!.stats().boards.vend2!.hellos > hellos, 'the new hello read')
  const page = await (await ch.c.get('/boards')).text()
  const card = page.slice(page.indexOf('data-board="vend2"'))
  t.match(
    card,
    /firmware <code data-firmware="svc-companion">svc-companion<\/code> <span data-version="0.3.0">0.3.0<\/span> · protocol <span data-proto="2">2<\/span> <span class="tag">this hub speaks 1<\/span>/,
  )
  t.notMatch(page.slice(0, page.indexOf('data-board="vend2"')), /this hub speaks/, 'vend1 is not flagged')
})

t.test('send a command: the board answers; bad input and forged posts send nothing', async (t) => {
  const ch = await signedIn(t)
  const commands = () => ch.bridge()!.simulated('vend1')!.stats().commands
  const send = (f: Record<string, string>, o?: { origin?: string | null }) =>
    ch.c.post('/boards/send', { _csrf: ch.csrf, ...f }, o)

  const ok = await send({ board: 'vend1', cmd: 'gpio_write', args: '{"pin":8,"value":1}' })
  t.equal(ok.status, 200)
  t.match(
    await ok.text(),
    /vend1 answered <code>gpio_write<\/code>: <code>\{&quot;pin&quot;:8,&quot;value&quot;:1\}<\/code>/,
  )
  const read = await ch.hub.bridge!.send('vend1', 'gpio_read', { pin: 8 }, { timeoutMs: 5000 })
  t.same(read, { ok: true, result: { pin: 8, value: 1 } }, 'the board did it')
  const before = commands()

  const refused: [Record<string, string>, number, RegExp][] = [
    [
      { board: 'vend1', cmd: 'GPIO WRITE', args: '{}' },
      400,
      /command: must be a lowercase name[^<]*got &quot;GPIO WRITE&quot;; nothing was sent/,
    ],
    [
      { board: 'vend1', cmd: 'gpio_write', args: '{"pin":8,' },
      400,
      /arguments is not JSON at line 1, column 10: [^<]*; nothing was sent/,
    ],
    [
      { board: 'vend1', cmd: 'gpio_write', args: `"${'x'.repeat(17 * 1024)}"` },
      413,
      /arguments is larger than 16 KiB; nothing was sent/,
    ],
    [
      { board: 'vend9', cmd: 'ping', args: '' },
      404,
      /unknown board &quot;vend9&quot;: this hub has vend1, vend2; nothing was sent/,
    ],
  ]
  for (const [form, status, text] of refused) {
    const r = await send(form)
    t.equal(r.status, status, JSON.stringify(form))
    const body = await r.text()
    t.match(body, text)
    t.match(
      body,
      new RegExp(`<input name="cmd" value="${form.cmd!.replace(/[{}]/g, '.')}"`),
      'the form keeps what was typed',
    )
  }
  const asObject = await ch.c.post(
    '/boards/send',
    { _csrf: ch.csrf, board: 'vend1', cmd: 'ping', args: { a: 1 } } as never,
    { json: true },
  )
  t.equal(asObject.status, 400)
  t.match(await asObject.text(), /arguments: expected the text of the arguments box/)
  const forged = [
    await send({ board: 'vend1', cmd: 'ping', _csrf: 'forged' }),
    await send({ board: 'vend1', cmd: 'ping' }, { origin: 'http://evil.example' }),
    await send({ board: 'vend1', cmd: 'ping' }, { origin: null }),
  ]
  t.same(
    forged.map((r) => r.status),
    [403, 403, 403],
  )
  t.equal(commands(), before, 'no command reached the board')

  // The board says no: its own words, with the local API's status (422).
  const no = await send({ board: 'vend1', cmd: 'gpio_write', args: '{"pin":999,"value":1}' })
  t.equal(no.status, 422)
  t.match(await no.text(), /vend1 did not run gpio_write: args.pin: must be an integer from 0 to \d+/)
  t.equal(commands(), before + 1, 'that one reached the board')
})
