// Signed webhooks on the real gateway (loopback Fastify): GitHub's X-Hub-Signature-256 over the
// exact bytes received, secrets from hub.toml's [webhook.secrets] (env or a 0600 file), and the
// refusal to start an unsigned webhook trigger on a gateway beyond loopback, at its SOP's file:line.
import t from 'tap'
import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { silentLog } from '../../hub/log.ts'
import { createFirer } from '../../hub/triggers/fire.ts'
import { buildPlan } from '../../hub/triggers/plan.ts'
import { type WebhookOptions, startWebhookGateway } from '../../hub/triggers/webhook.ts'
import { signBody } from '../../hub/triggers/webhook-signature.ts'
import { matches } from '../../sops/conditions.ts'
import { loadSops } from '../../sops/load.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { recordingEngine, sop } from './fake-engine.ts'

const SECRET = 'It is a secret to everybody'
const env = { ORDER_HOOK_SECRET: SECRET }

async function gateway(
  t: { teardown(fn: () => unknown): void },
  opts: Partial<WebhookOptions> = {},
  paths = ['/hooks/order', '/hooks/open'],
) {
  const engine = recordingEngine()
  const plan = buildPlan(paths.map((p, i) => sop(`hook${i}`, [{ type: 'webhook', path: p }])))
  const gw = await startWebhookGateway(
    createFirer(engine, matches, silentLog),
    silentLog,
    {
      host: '127.0.0.1',
      port: 0,
      bodyLimit: 1024,
      secrets: { '/hooks/order': { env: 'ORDER_HOOK_SECRET' } },
      env,
      ...opts,
    },
    plan,
  )
  t.teardown(() => gw.stop())
  return { gw, engine }
}

const post = (url: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

t.test('a request signed with the secret starts a run; the payload is the body', async (t) => {
  const { gw, engine } = await gateway(t)
  const body = '{"sku":"A1","qty":2}'
  const res = await post(`${gw.url}/hooks/order`, body, { 'x-hub-signature-256': signBody(SECRET, body) })
  t.equal(res.status, 202)
  t.same(await res.json(), { runId: 'run-1', outcome: 'started', reason: 'slot free' })
  t.same(engine.calls[0]?.event.payload, { sku: 'A1', qty: 2 })
  // Upper-case hex is the same signature (some senders print it so).
  const upper = `sha256=${signBody(SECRET, body).slice(7).toUpperCase()}`
  t.equal((await post(`${gw.url}/hooks/order`, body, { 'x-hub-signature-256': upper })).status, 202)
  t.equal(engine.calls.length, 2)
})

t.test('the signature is over the exact bytes received, not a re-encoding of them', async (t) => {
  const { gw, engine } = await gateway(t)
  // 0xff 0xfe is not UTF-8: decoded and re-encoded it would become EF BF BD EF BF BD.
  const bytes = new Uint8Array([0x68, 0x69, 0xff, 0xfe])
  const res = await post(`${gw.url}/hooks/order`, bytes, {
    'content-type': 'application/octet-stream',
    'x-hub-signature-256': signBody(SECRET, Buffer.from(bytes)),
  })
  t.equal(res.status, 202)
  t.equal(engine.calls.length, 1)
})

t.test(
  'unsigned, wrongly signed and replayed-with-changed-body requests: 401, nothing started',
  async (t) => {
    const { gw, engine } = await gateway(t)
    const url = `${gw.url}/hooks/order`
    const body = '{"sku":"A1","qty":2}'
    const good = signBody(SECRET, body)
    const cases: [string, string, Record<string, string>, RegExp][] = [
      ['unsigned', body, {}, /missing X-Hub-Signature-256 header/],
      ['empty header', body, { 'x-hub-signature-256': '' }, /missing X-Hub-Signature-256/],
      [
        'signed with another secret',
        body,
        { 'x-hub-signature-256': signBody('guess', body) },
        /does not match the body/,
      ],
      [
        'replayed with a changed body',
        '{"sku":"A1","qty":200}',
        { 'x-hub-signature-256': good },
        /does not match the body/,
      ],
      [
        'sha1 instead',
        body,
        { 'x-hub-signature-256': `sha1=${'0'.repeat(40)}` },
        /must be "sha256=" followed by 64 hex/,
      ],
      ['truncated', body, { 'x-hub-signature-256': good.slice(0, -2) }, /64 hex digits/],
      ['the old header only', body, { 'x-hub-signature': good }, /missing X-Hub-Signature-256/],
      // Signature before parsing: an unsigned bad body says "unsigned", not "bad JSON".
      ['unsigned and not JSON', '{"broken', {}, /missing X-Hub-Signature-256/],
    ]
    for (const [what, sent, headers, re] of cases) {
      const res = await post(url, sent, headers)
      t.equal(res.status, 401, what)
      t.match(await res.json(), { error: re }, what)
    }
    t.equal(engine.calls.length, 0, 'no run started')
    // The same signed request still works: refusals changed nothing.
    t.equal((await post(url, body, { 'x-hub-signature-256': good })).status, 202)
    // A path with no secret on a loopback gateway is open, as before.
    t.equal((await post(`${gw.url}/hooks/open`, body)).status, 202)
  },
)

t.test('bad bodies on a signed path get clear errors and start nothing', async (t) => {
  const { gw, engine } = await gateway(t)
  const url = `${gw.url}/hooks/order`
  const notJson = '{"broken'
  let res = await post(url, notJson, { 'x-hub-signature-256': signBody(SECRET, notJson) })
  t.equal(res.status, 400)
  t.match(await res.json(), { error: /body is not valid JSON/ })
  const huge = `"${'x'.repeat(4096)}"`
  res = await post(url, huge, { 'x-hub-signature-256': signBody(SECRET, huge) })
  t.equal(res.status, 413)
  t.match(await res.json(), { error: /body is larger than 1024 bytes/ })
  t.equal(engine.calls.length, 0)
})

t.test(
  'a secret in a 0600 file works; a file others can read, or a missing secret, refuses to start',
  async (t) => {
    const dir = await tempDir(t)
    const file = join(dir, 'order.secret')
    await writeFile(file, `${SECRET}\n`, { mode: 0o600 })
    await chmod(file, 0o600)
    const { gw, engine } = await gateway(t, { secrets: { '/hooks/order': { file } } })
    const body = 'plain'
    const res = await post(`${gw.url}/hooks/order`, body, {
      'content-type': 'text/plain',
      'x-hub-signature-256': signBody(SECRET, body),
    })
    t.equal(res.status, 202, 'the trailing newline of the file is not part of the secret')
    t.equal(engine.calls[0]?.event.payload, 'plain')

    await chmod(file, 0o644)
    await t.rejects(gateway(t, { secrets: { '/hooks/order': { file } } }), {
      message:
        /webhook\.secrets\."\/hooks\/order": .*order\.secret is readable by others \(mode 644\); chmod 600/,
    })
    await t.rejects(gateway(t, { secrets: { '/hooks/order': { file: join(dir, 'none') } } }), {
      message: /webhook\.secrets\."\/hooks\/order": cannot read .*none \(ENOENT\)/,
    })
    await t.rejects(gateway(t, { env: {} }), {
      message:
        /webhook\.secrets\."\/hooks\/order": environment variable ORDER_HOOK_SECRET is not set or empty/,
    })
  },
)

t.test('beyond loopback, an unsigned webhook trigger refuses the start at its SOP file:line', async (t) => {
  const sopsDir = await tempDir(t)
  const dir = join(sopsDir, 'orders')
  await mkdir(dir)
  await writeFile(
    join(dir, 'SOP.toml'),
    '[sop]\nname = "orders"\ndescription = "d"\nagent = "a"\n\n[[triggers]]\ntype = "manual"\n\n[[triggers]]\ntype = "webhook"\npath = "/hooks/order"\n\n[[triggers]]\ntype = "webhook"\npath = "/hooks/unsigned"\n',
  )
  await writeFile(join(dir, 'SOP.md'), '# orders\n\n## Steps\n\n1. **Take** — take it.\n')
  const loaded = await loadSops(sopsDir)
  t.same(
    loaded.diagnostics.filter((d) => d.severity === 'error'),
    [],
  )
  const plan = buildPlan(loaded.sops)
  const start = (host: string, secrets: WebhookOptions['secrets']) =>
    startWebhookGateway(
      createFirer(recordingEngine(), matches, silentLog),
      silentLog,
      { host, port: 0, bodyLimit: 1024, secrets, env },
      plan,
    )
  const err = await start('0.0.0.0', { '/hooks/order': { env: 'ORDER_HOOK_SECRET' } }).then(
    (gw) => (gw.stop(), null),
    (e: Error) => e,
  )
  t.ok(err, 'refused')
  // Line 13: the third [[triggers]] table, where the unsigned trigger starts.
  const file = join(dir, 'SOP.toml').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
  t.match(err?.message, new RegExp(`^${file}:13: webhook trigger "/hooks/unsigned" has no secret`))
  t.match(err?.message, /webhook\.host = "0\.0\.0\.0" is not loopback.*\[webhook\.secrets\]/)
  t.notMatch(err?.message, /\/hooks\/order"/, 'the signed trigger is not named')
  // With every trigger signed, the same open host starts; on loopback no secret is needed.
  const open = await start('0.0.0.0', {
    '/hooks/order': { env: 'ORDER_HOOK_SECRET' },
    '/hooks/unsigned': { env: 'ORDER_HOOK_SECRET' },
  })
  await open.stop()
  const local = await start('127.0.0.1', {})
  await local.stop()
})

t.test(
  'a reload that adds an unsigned trigger on an open host: that path refuses every request',
  async (t) => {
    const engine = recordingEngine()
    const gw = await startWebhookGateway(
      createFirer(engine, matches, silentLog),
      silentLog,
      {
        host: '0.0.0.0',
        port: 0,
        bodyLimit: 1024,
        secrets: { '/hooks/order': { env: 'ORDER_HOOK_SECRET' } },
        env,
      },
      buildPlan([sop('a', [{ type: 'webhook', path: '/hooks/order' }])]),
    )
    t.teardown(() => gw.stop())
    gw.setPlan(
      buildPlan([
        sop('a', [{ type: 'webhook', path: '/hooks/order' }]),
        sop('b', [{ type: 'webhook', path: '/hooks/new' }]),
      ]),
    )
    const url = gw.url.replace('0.0.0.0', '127.0.0.1')
    const res = await post(`${url}/hooks/new`, '{}')
    t.equal(res.status, 401)
    t.match(await res.json(), { error: /has no secret configured/ })
    t.equal(engine.calls.length, 0)
  },
)

t.test('hub.toml [webhook.secrets]: references only, each naming one place', async (t) => {
  const ok = parseConfig(
    '[webhook]\nhost = "0.0.0.0"\n[webhook.secrets]\n"/hooks/order" = { env = "ORDER_HOOK_SECRET" }\n"/hooks/b" = { file = "b.secret" }\n',
    '/etc/svc/hub.toml',
    {},
  )
  if (!ok.ok) throw new Error(ok.error)
  t.same(ok.config.webhook.secrets, {
    '/hooks/order': { env: 'ORDER_HOOK_SECRET' },
    '/hooks/b': { file: '/etc/svc/b.secret' },
  })
  const bad: [string, RegExp][] = [
    ['"/h" = { env = "A", file = "f" }', /webhook\.secrets\."\/h": give exactly one of env .* and file/],
    ['"/h" = {}', /webhook\.secrets\."\/h": give exactly one/],
    ['"/h" = { secret = "hunter2" }', /webhook\.secrets\."\/h"\.secret: unknown field/],
    ['"h" = { env = "A" }', /webhook\.secrets\.h: unknown field/],
    ['"/h" = { env = "1BAD" }', /webhook\.secrets\."\/h"\.env: must match/],
  ]
  for (const [line, re] of bad) {
    const r = parseConfig(`[webhook.secrets]\n${line}\n`, '/etc/svc/hub.toml', {})
    t.equal(r.ok, false, line)
    if (!r.ok) t.match(r.error, re, line)
  }
})

t.test(
  'the hub: hub.toml [webhook.secrets] reaches the gateway; an open host with an unsigned trigger does not start',
  async (t) => {
    const home = await tempDir(t)
    const sopsDir = join(home, 'sops')
    await mkdir(join(sopsDir, 'orders'), { recursive: true })
    await writeFile(
      join(sopsDir, 'orders', 'SOP.toml'),
      '[sop]\nname = "orders"\ndescription = "d"\nexecution_mode = "deterministic"\nagent = "a"\n\n[[triggers]]\ntype = "webhook"\npath = "/hooks/order"\n',
    )
    await writeFile(
      join(sopsDir, 'orders', 'SOP.md'),
      '# orders\n\n## Steps\n\n1. **Pause**\n   - call: {"tool":"wait","args":{"ms":1}}\n',
    )
    // The hub reads secrets from its own environment: a variable only this test sets.
    const name = `SVC_TEST_HOOK_SECRET_${process.pid}`
    process.env[name] = SECRET
    t.teardown(() => {
      delete process.env[name]
    })
    const toml = (secrets: string) =>
      `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nport = 0\n[api]\nport = 0\n[console]\nport = 0\n[webhook]\nhost = "0.0.0.0"\nport = 0\n${secrets}`
    const unsigned = parseConfig(toml(''), null, { SVC_HOME: home })
    if (!unsigned.ok) throw new Error(unsigned.error)
    await t.rejects(startHub(unsigned.config, silentLog), {
      // Line 7: the [[triggers]] table of the webhook trigger.
      message: /orders\/SOP\.toml:7: webhook trigger "\/hooks\/order" has no secret/,
    })

    const signed = parseConfig(toml(`[webhook.secrets]\n"/hooks/order" = { env = "${name}" }\n`), null, {
      SVC_HOME: home,
    })
    if (!signed.ok) throw new Error(signed.error)
    const hub = await startHub(signed.config, silentLog)
    t.teardown(() => hub.close())
    const url = `${(hub.webhookUrl as string).replace('0.0.0.0', '127.0.0.1')}/hooks/order`
    const body = '{"n":1}'
    let res = await post(url, body)
    t.equal(res.status, 401, 'unsigned')
    res = await post(url, body, { 'x-hub-signature-256': signBody(SECRET, body) })
    t.equal(res.status, 202, 'signed')
    const runs = await waitFor(async () => {
      const r = await hub.engine.listRuns({ sop: 'orders' })
      return r.length > 0 && r
    }, 'a run of orders')
    t.equal(runs.length, 1, 'one run: the signed request only')
  },
)
