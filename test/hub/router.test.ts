// The trigger router against a real Aedes on loopback, with a recording Engine.
import t, { type Test } from 'tap'
import { join } from 'node:path'
import mqtt from 'mqtt'
import Fastify from 'fastify'
import { installJsonErrors } from '../../errors/fastify.ts'
import { silentLog } from '../../hub/log.ts'
import { startTriggerRouter, type RouterOptions } from '../../hub/triggers/router.ts'
import { matches } from '../../sops/conditions.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'
import { recordingLog } from './broker-auth-helpers.ts'
import { recordingEngine, sop } from './fake-engine.ts'
import { queuedEvents } from '../../hub/broker/leftovers.ts'
import type { EmbeddedBroker } from '../../hub/broker/broker.ts'
import { subscriptionFilters } from '../../hub/triggers/dispatch.ts'
import { buildPlan } from '../../hub/triggers/plan.ts'

async function setup(t: Test, sops: ReturnType<typeof sop>[], extra: Partial<RouterOptions> = {}) {
  const dir = await tempDir(t)
  const broker = await startEmbeddedBroker(t, { dbPath: join(dir, 'broker') })
  const client = await mqtt.connectAsync(broker.url, { clientId: 'router', clean: false, reconnectPeriod: 0 })
  t.teardown(() => client.endAsync(true))
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  t.teardown(() => pub.endAsync(true))
  const engine = recordingEngine()
  const router = await startTriggerRouter(sops, {
    engine,
    matches,
    log: silentLog,
    mqtt: client,
    cron: { timezone: 'UTC', catchUp: true, statePath: join(dir, 'cron.json') },
    filesystem: { debounceMs: 20 },
    ...extra,
  })
  t.teardown(() => router.stop())
  return { router, engine, pub, dir, client }
}

t.test(
  'a board event on boards/<board>/<signal> starts the SOP, with the text payload and condition',
  async (t) => {
    const { engine, pub } = await setup(t, [
      sop('vend', [{ type: 'peripheral', board: 'vend1', signal: 'coin', condition: '$.cents >= 100' }]),
      sop('temp', [{ type: 'peripheral', board: 'vend1', signal: 'temp', condition: '> 30' }]),
    ])
    await pub.publishAsync('boards/vend1/coin', '{"cents":50}', { qos: 1 })
    await pub.publishAsync('boards/vend1/temp', 'hot', { qos: 1 })
    await pub.publishAsync('boards/vend1/temp', '31.5', { qos: 1 })
    await pub.publishAsync('boards/vend1/coin', '{"cents":100}', { qos: 1 })
    await engine.waitFor(2)
    t.same(
      engine.calls.map((c) => [c.sop, c.event.type, c.event.source, c.event.payload]),
      [
        ['temp', 'peripheral', 'boards/vend1/temp', '31.5'],
        ['vend', 'peripheral', 'boards/vend1/coin', '{"cents":100}'],
      ],
    )
  },
)

t.test('mqtt triggers: + wildcard and conditions; retained replays do not fire', async (t) => {
  const { engine, pub, router } = await setup(t, [
    sop('m', [{ type: 'mqtt', topic: 'sensors/+/temp', condition: '$.c > 20' }]),
  ])
  await pub.publishAsync('sensors/a/temp', '{"c":25}', { qos: 1 })
  await pub.publishAsync('sensors/a/b/temp', '{"c":25}', { qos: 1 })
  await pub.publishAsync('sensors/b/temp', 'not json', { qos: 1 })
  await pub.publishAsync('sensors/c/temp', '{"c":21}', { qos: 1, retain: true })
  await engine.waitFor(2)
  t.same(
    engine.calls.map((c) => c.event.source),
    ['sensors/a/temp', 'sensors/c/temp'],
  )
  // A new subscription set (setSops) replays the retained message: it must not start a run.
  await router.setSops([
    sop('m', [{ type: 'mqtt', topic: 'sensors/+/temp', condition: '' }]),
    sop('n', [{ type: 'mqtt', topic: 'sensors/#', condition: '' }]),
  ])
  await pub.publishAsync('sensors/z/temp', '{"c":1}', { qos: 1 })
  await engine.waitFor(4)
  t.same(
    engine.calls
      .slice(2)
      .map((c) => `${c.sop} ${c.event.source}`)
      .sort(),
    ['m sensors/z/temp', 'n sensors/z/temp'],
  )
})

/** The router fed inside the embedded broker (hub/broker/trigger-feed.ts), as the hub runs it there. */
async function fedRouter(
  t: Test,
  dir: string,
  broker: EmbeddedBroker,
  sops: ReturnType<typeof sop>[],
  engine: RouterOptions['engine'],
) {
  const router = await startTriggerRouter(sops, {
    engine,
    matches,
    log: silentLog,
    feed: broker.triggers,
    cron: { timezone: 'UTC', catchUp: true, statePath: join(dir, 'cron.json') },
    filesystem: { debounceMs: 20 },
  })
  t.teardown(() => router.stop())
  return router
}

/** A fresh embedded broker on the SOPs' trigger filters, a publisher, and the router fed inside it. */
async function setupFed(t: Test, sops: ReturnType<typeof sop>[], engine: RouterOptions['engine']) {
  const dir = await tempDir(t)
  const broker = await startEmbeddedBroker(t, {
    dbPath: join(dir, 'broker'),
    triggerFilters: subscriptionFilters(buildPlan(sops)),
  })
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  t.teardown(() => pub.endAsync(true))
  return { pub, router: await fedRouter(t, dir, broker, sops, engine) }
}

for (const via of ['session', 'feed'] as const)
  t.test(`what a client sends never crashes the router (${via})`, async (t) => {
    const sops = [sop('v', [{ type: 'peripheral', board: 'b', signal: 's', condition: '$.a.b.c == 1' }])]
    const fed = recordingEngine()
    const { engine, pub, router } =
      via === 'session' ? await setup(t, sops) : { engine: fed, ...(await setupFed(t, sops, fed)) }
    const nasty = [
      '',
      '{',
      'null',
      '[]',
      '{"a":null}',
      '\u0000\uffff',
      Buffer.from([0xff, 0xfe, 0x00]).toString('latin1'),
      'x'.repeat(300 * 1024),
    ]
    // Each PUBACK comes (on the feed, once the message has been offered): nothing hangs.
    for (const p of nasty) await pub.publishAsync('boards/b/s', p, { qos: 1 })
    await pub.publishAsync('boards/b/s', '{"a":{"b":{"c":1}}}', { qos: 1 })
    await engine.waitFor(1)
    t.equal(engine.calls.length, 1)
    t.equal(engine.calls[0]?.event.payload, '{"a":{"b":{"c":1}}}')
    t.same(
      await router.handleMessage('boards/b/s', 'x'.repeat(300 * 1024)),
      [],
      'oversized payloads are ignored',
    )
  })

/** An engine whose first trigger throws (its store is down) and whose later ones start a run. */
function failsFirst() {
  let n = 0
  return {
    calls: () => n,
    async trigger() {
      n++
      if (n === 1) throw new Error('store is down')
      return { outcome: 'started' as const, runId: 'r2', reason: 'ok' }
    },
  }
}

t.test(
  'on the feed, an engine that throws still lets the PUBACK go, and the next event is admitted',
  async (t) => {
    const engine = failsFirst()
    const { pub } = await setupFed(t, [sop('m', [{ type: 'mqtt', topic: 'in/+', condition: '' }])], engine)
    await pub.publishAsync('in/1', 'x', { qos: 1 })
    await pub.publishAsync('in/2', 'x', { qos: 1 })
    t.equal(engine.calls(), 2, 'both offered; the failure was logged, not fatal')
  },
)

t.test('an engine that throws is reported as a value; the router keeps going', async (t) => {
  const _dir = await tempDir(t)
  const engine = failsFirst()
  const router = await startTriggerRouter([sop('a', [{ type: 'manual' }])], {
    engine,
    matches,
    log: silentLog,
    cron: { timezone: 'UTC', catchUp: false },
    filesystem: { debounceMs: 10 },
  })
  t.teardown(() => router.stop())
  t.same(await router.manual('a', { x: 1 }), { ok: false, code: 'INTERNAL', error: 'store is down' })
  t.same(await router.manual('a', 'again'), {
    ok: true,
    decision: { outcome: 'started', runId: 'r2', reason: 'ok' },
  })
  t.same(await router.manual('nope', {}), {
    ok: false,
    code: 'SOP_NOT_LOADED',
    error: 'no SOP named "nope" is loaded',
  })
})

t.test('channels: a named local inbox on the local API', async (t) => {
  const { engine, router } = await setup(t, [
    sop('c1', [{ type: 'channel', channel: 'orders', alias: 'o', condition: '' }]),
    sop('c2', [{ type: 'channel', channel: 'orders', condition: '$.qty > 1' }]),
  ])
  // The routes' refusals are thrown coded errors; the app's one error path answers them, as the
  // local API's does.
  const app = Fastify()
  installJsonErrors(app, silentLog)
  router.registerRoutes(app)
  t.teardown(() => app.close())
  let res = await app.inject({ method: 'POST', url: '/channels/orders', payload: { qty: 2 } })
  t.equal(res.statusCode, 200)
  t.same(
    res.json().runs.map((r: { sop: string }) => r.sop),
    ['c1', 'c2'],
  )
  res = await app.inject({
    method: 'POST',
    url: '/channels/o',
    payload: 'plain text',
    headers: { 'content-type': 'text/plain' },
  })
  t.same(
    res.json().runs.map((r: { sop: string }) => r.sop),
    ['c1'],
  )
  res = await app.inject({ method: 'POST', url: '/channels/nobody' })
  t.equal(res.statusCode, 404)
  t.match(res.json().error, /no SOP listens on channel "nobody"/)
  res = await app.inject({ method: 'POST', url: '/channels/' + encodeURIComponent('bad name!') })
  t.equal(res.statusCode, 400)
  t.equal(engine.calls.length, 3)
})

t.test(
  'a flood while the engine is stuck is bounded by backpressure: the session stops reading, nothing is dropped',
  async (t) => {
    let stuck = true
    const release: (() => void)[] = []
    let calls = 0
    const engine = {
      trigger: () =>
        new Promise<{ outcome: 'started'; reason: string }>((resolve) => {
          calls++
          const answer = () => resolve({ outcome: 'started', reason: 'late' })
          if (stuck) release.push(answer)
          else answer()
        }),
    }
    const log = recordingLog()
    const { router, pub, client } = await setup(
      t,
      [sop('f', [{ type: 'peripheral', board: 'b', signal: 's', condition: '' }])],
      { engine, maxInFlight: 5, log },
    )
    let delivered = 0
    client.on('message', (topic, _p, packet) => {
      if (topic === 'boards/b/s' && !packet.retain) delivered++
    })
    // The broker takes all 20 for the hub's session (its PUBACKs to the publisher say so).
    for (let i = 0; i < 20; i++) await pub.publishAsync('boards/b/s', String(i), { qos: 1 })
    await waitFor(() => router.mqttBacklog()?.paused === 1, 'the session to stop reading at the cap')
    t.equal(calls, 5, 'only the cap reached the engine')
    t.equal(delivered, 5, 'and no message past the cap was read off the socket')
    t.match(router.mqttBacklog(), { inFlight: 5, peak: 5 })
    // Said out loud, with the backlog and the broker limit that drops next.
    t.match(
      log.lines.filter((l) => l.level === 'warn' && /the hub is behind its MQTT broker/.test(l.msg)),
      [{ obj: { inFlight: 5, peak: 5 }, msg: /stopped reading.*max_queued_messages/ }],
    )
    // And on the local API.
    const app = Fastify()
    t.teardown(() => app.close())
    router.registerRoutes(app)
    const res = await app.inject({ method: 'GET', url: '/triggers/mqtt' })
    t.match(res.json(), { backlog: { inFlight: 5, peak: 5, paused: 1, behind: 0, repeats: 0 } })
    stuck = false
    for (const r of release.splice(0)) r()
    await waitFor(() => calls === 20, 'every message to reach the engine once it catches up')
    await waitFor(() => router.mqttBacklog()?.inFlight === 0, 'the backlog to drain')
    t.equal(delivered, 20, 'none dropped')
  },
)

t.test('a QoS 1 PUBACK goes out only once the admission is stored, in arrival order', async (t) => {
  const release = new Map<string, () => void>()
  const engine = {
    trigger: (_sop: string, e: { payload: unknown }) =>
      new Promise<{ outcome: 'started'; reason: string }>((resolve) => {
        release.set(String(e.payload), () => resolve({ outcome: 'started', reason: 'ok' }))
      }),
  }
  const { pub, client } = await setup(t, [sop('a', [{ type: 'mqtt', topic: 'ack/+', condition: '' }])], {
    engine,
  })
  const sent: number[] = []
  const ids = new Map<string, number>()
  client.on('message', (_topic, payload, packet) => ids.set(payload.toString(), packet.messageId!))
  client.on('packetsend', (p) => {
    if (p.cmd === 'puback') sent.push((p as { messageId: number }).messageId)
  })
  for (const x of ['one', 'two', 'three']) await pub.publishAsync(`ack/${x}`, x, { qos: 1 })
  await waitFor(() => release.size === 3, 'three admissions under way')
  t.same(sent, [], 'no PUBACK while no admission is stored')
  release.get('two')!()
  await new Promise((r) => setTimeout(r, 50))
  t.same(sent, [], 'the second stored waits for the first (PUBACKs keep arrival order)')
  release.get('one')!()
  await waitFor(() => sent.length === 2, 'the first two PUBACKs')
  t.same(sent, [ids.get('one'), ids.get('two')])
  release.get('three')!()
  await waitFor(() => sent.length === 3, 'the third PUBACK')
  t.equal(sent[2], ids.get('three'))
})

t.test(
  "on the embedded broker, what an older hub's session still had queued is admitted first, once, and then let go of",
  { timeout: 60_000 },
  async (t) => {
    const dir = await tempDir(t)
    const dbPath = join(dir, 'broker')
    // An older hub's router: its session subscribed to the trigger topic, then the hub stopped
    // with events queued for it.
    const before = await startEmbeddedBroker(t, { dbPath })
    const old = await mqtt.connectAsync(before.url, { clientId: 'hub-1', clean: false, reconnectPeriod: 0 })
    await old.subscribeAsync('in/+', { qos: 1 })
    await old.endAsync()
    const pub = await mqtt.connectAsync(before.url, { reconnectPeriod: 0 })
    await pub.publishAsync('in/1', 'one', { qos: 1 })
    await pub.publishAsync('in/2', 'two', { qos: 1 })
    await pub.endAsync()
    await before.close()

    const upgraded = { dbPath, hubClientId: 'hub-1', triggerFilters: ['in/+'] }
    // Killed before its router took them: the hub's clean session connected, and cleared nothing.
    const killed = await startEmbeddedBroker(t, upgraded)
    t.equal(killed.triggers.kept(), 2, 'the queued events are first in line')
    const early = await mqtt.connectAsync(killed.url, {
      clientId: 'hub-1',
      clean: true,
      reconnectPeriod: 0,
      ...killed.hubLogin,
    })
    await early.endAsync()
    await killed.close()

    const broker = await startEmbeddedBroker(t, upgraded)
    t.equal(broker.triggers.kept(), 2, 'still there at the next start')
    const persistence = (
      broker.aedes as unknown as {
        persistence: Parameters<typeof queuedEvents>[0] & {
          subscriptionsByClient(c: { id: string }): Promise<unknown[]>
        }
      }
    ).persistence
    t.same(
      await persistence.subscriptionsByClient({ id: 'hub-1' }),
      [],
      "the older session's subscriptions are gone",
    )
    const hub = await mqtt.connectAsync(broker.url, {
      clientId: 'hub-1',
      clean: true,
      reconnectPeriod: 0,
      ...broker.hubLogin,
    })
    t.teardown(() => hub.endAsync(true))
    let toSession = 0
    hub.on('message', () => toSession++)
    const engine = recordingEngine()
    const router = await fedRouter(
      t,
      dir,
      broker,
      [sop('m', [{ type: 'mqtt', topic: 'in/+', condition: '' }])],
      engine,
    )
    await engine.waitFor(2)
    const now = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
    t.teardown(() => now.endAsync(true))
    // Its PUBACK comes once it is admitted.
    await now.publishAsync('in/3', 'three', { qos: 1 })
    t.same(
      engine.calls.map((c) => [c.event.source, c.event.payload, c.event.once?.key.split(' ')[0]]),
      [
        ['in/1', 'one', 'queued'],
        ['in/2', 'two', 'queued'],
        ['in/3', 'three', 'from'],
      ],
      'the queued ones first, then the new one, each once, each with a once-only key',
    )
    t.equal(toSession, 0, "nothing reached the hub's session")
    // Once they are admitted, the clean session's connect clears them.
    await waitFor(
      async () => (await queuedEvents(persistence, 'hub-1')).length === 0,
      'the old queue cleared',
    )
    await router.stop()
    await hub.endAsync()
    await broker.close()
    const after = await startEmbeddedBroker(t, upgraded)
    t.equal(after.triggers.kept(), 0, 'nothing is taken twice at the start after')
  },
)
