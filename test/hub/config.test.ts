import t from 'tap'
import { join } from 'node:path'
import { writeFile } from 'node:fs/promises'
import { DEFAULTS, loadConfig, parseConfig } from '../../hub/daemon/config.ts'
import { tempDir } from '../helpers/tmp.ts'

t.test('no file at all: documented defaults under SVC_HOME', async (t) => {
  const home = await tempDir(t)
  const r = await loadConfig(undefined, { SVC_HOME: home })
  if (!r.ok) throw new Error(r.error)
  const c = r.config
  t.equal(c.file, null)
  t.equal(c.sopsDir, join(home, 'sops'))
  t.equal(c.dataDir, join(home, 'data'))
  t.equal(c.broker.url, null)
  t.equal(c.broker.port, DEFAULTS.brokerPort)
  t.equal(c.broker.host, '127.0.0.1')
  t.equal(c.broker.wsPort, null)
  t.equal(c.api.port, DEFAULTS.apiPort)
  t.equal(c.webhook.port, DEFAULTS.webhookPort)
  t.equal(c.webhook.enabled, true)
  t.equal(c.cron.catchUp, true)
  t.same(c.boards, [])
})

t.test('<SVC_HOME>/hub.toml is read when present; relative paths resolve against the file', async (t) => {
  const home = await tempDir(t)
  await writeFile(
    join(home, 'hub.toml'),
    '[hub]\nsops_dir = "my-sops"\n[broker]\nport = 0\nws_port = 0\n[cron]\ntimezone = "Europe/Berlin"\n[[boards]]\nname = "vend1"\nport = "/dev/ttyUSB0"\nline_cap = 2048\nsimulate = true\n',
  )
  const r = await loadConfig(undefined, { SVC_HOME: home })
  if (!r.ok) throw new Error(r.error)
  t.equal(r.config.sopsDir, join(home, 'my-sops'))
  t.equal(r.config.broker.port, 0)
  t.equal(r.config.broker.wsPort, 0)
  t.equal(r.config.cron.timezone, 'Europe/Berlin')
  t.same(r.config.boards, [{ name: 'vend1', port: '/dev/ttyUSB0', lineCap: 2048, simulate: true }])
})

t.test('an explicit --config that does not exist is an error naming it', async (t) => {
  const r = await loadConfig('/nonexistent/hub.toml', {})
  t.equal(r.ok, false)
  if (!r.ok) t.match(r.error, /\/nonexistent\/hub.toml does not exist/)
})

const bad: [string, RegExp][] = [
  ['[broker]\nport = 70000\n', /broker\.port: must be <= 65535/],
  ['[broker]\nport = "1883"\n', /broker\.port: must be integer/],
  ['[broker]\nprot = 1\n', /broker\.prot: unknown field/],
  ['[brokers]\n', /brokers: unknown field/],
  ['[broker]\nurl = "http://x"\n', /broker\.url: /],
  ['[broker]\nurl = "mqtt://"\n', /broker\.url: no host in "mqtt:\/\/"/],
  ['[broker]\nurl = "mqtt://h:99999"\n', /broker\.url: not a URL/],
  ['[hub]\nlog_level = "loud"\n', /hub\.log_level: must be one of/],
  ['[cron]\ntimezone = "Mars/Olympus"\n', /cron\.timezone: unknown timezone "Mars\/Olympus"/],
  ['[webhook]\nbody_limit = 0\n', /webhook\.body_limit: must be >= 1/],
  ['[[boards]]\nname = "a b"\nport = "/dev/x"\n', /boards\[0\]\.name: /],
  ['[[boards]]\nname = "a"\n', /boards\[0\]: must have required properties? port|boards\[0\].*port/],
  [
    '[[boards]]\nname = "a"\nport = "/x"\n[[boards]]\nname = "a"\nport = "/y"\n',
    /boards\[1\]\.name: board "a" is configured twice/,
  ],
  ['[broker\nport = 1', /hub\.toml:1:\d+: /],
]
for (const [text, re] of bad) {
  t.test(`rejects ${JSON.stringify(text)}`, async (t) => {
    const r = parseConfig(text, '/etc/svc/hub.toml', {})
    t.equal(r.ok, false)
    if (!r.ok) {
      t.match(r.error, re)
      t.match(r.error, /^\/etc\/svc\/hub\.toml/, 'names the file')
    }
  })
}

t.test('[chain] is kept for the attestation part; [agent] is checked', async (t) => {
  const r = parseConfig(
    '[chain]\nrpc_url = "http://127.0.0.1:8545"\n[agent]\nurl = "http://127.0.0.1:8080/v1"\nmodel = "m"\napi_key_env = "OPENAI_API_KEY"\n',
    null,
    {},
  )
  if (!r.ok) throw new Error(r.error)
  t.same(r.config.chain, { rpc_url: 'http://127.0.0.1:8545' })
  t.same(r.config.agent, { url: 'http://127.0.0.1:8080/v1', model: 'm', apiKeyEnv: 'OPENAI_API_KEY' })
  const bad = parseConfig('[agent]\nurl = "ftp://x"\n', null, {})
  t.equal(bad.ok, false)
  if (!bad.ok) t.match(bad.error, /agent\.url: .*agent\.model|agent: .*model|agent\.url/)
})

t.test(
  'SVC_SOPS_DIR is the default sops dir for the hub, as for svc sop; hub.sops_dir wins over it',
  async (t) => {
    const env = { SVC_HOME: '/var/lib/svc-test', SVC_SOPS_DIR: '/srv/sops' }
    const byEnv = parseConfig('', null, env)
    t.ok(byEnv.ok)
    if (byEnv.ok) t.equal(byEnv.config.sopsDir, '/srv/sops')
    const byFile = parseConfig('[hub]\nsops_dir = "/etc/svc/sops"\n', null, env)
    t.ok(byFile.ok)
    if (byFile.ok) t.equal(byFile.config.sopsDir, '/etc/svc/sops')
    const home = parseConfig('', null, { SVC_HOME: '/var/lib/svc-test' })
    if (home.ok) t.equal(home.config.sopsDir, '/var/lib/svc-test/sops')
  },
)
