// One table of hub.toml's settings (hub/daemon/config-schema.ts): what `svc hub config` prints, the
// defaults the hub runs on and hub/README.md's reference all come from it, so a setting added to
// the table and missed by one of them fails here.
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseToml, stringify } from 'smol-toml'
import t from 'tap'
import { printConfig } from '../../cli/hub.ts'
import { defaultsOf } from '../../config/sections.ts'
import { HubTomlSchema, parseConfig } from '../../hub/daemon/config.ts'
import { COMPUTED } from '../../hub/daemon/config-schema.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '../..')
const table = defaultsOf(HubTomlSchema)
const computed = new Set(
  Object.entries(COMPUTED).flatMap(([section, keys]) => keys.map((k: string) => `${section}.${k}`)),
)
/** Sections printed only when the file has them: their defaults apply within them. */
const OPTIONAL_SECTIONS = new Set(['amqp', 'agent', 'chain'])

function at(doc: unknown, dotted: string): unknown {
  let v = doc
  for (const k of dotted.split('.')) v = (v as Record<string, unknown> | undefined)?.[k]
  return v
}

t.test('the table is read whole: every section and a default from each kind', async (t) => {
  t.ok(table.size > 70, `${table.size} settings`)
  t.equal(table.get('broker.port'), 1883)
  t.equal(table.get('webhook.body_limit'), 65536)
  t.equal(table.get('history.commit_window_ms'), 0)
  t.equal(table.get('metrics.port'), undefined, 'a setting with no default')
  t.ok(table.has('chain.max_batch_lines'), '[chain] is in the table')
})

t.test('svc hub config on no file prints every setting that has a default, with that default', async (t) => {
  const r = parseConfig('', null, { SVC_HOME: '/var/lib/svc-test' })
  if (!r.ok) throw new Error(r.error)
  const printed = parseToml(printConfig(r.config, false).out)
  for (const [key, dflt] of table) {
    if (OPTIONAL_SECTIONS.has(key.split('.')[0] as string)) continue
    const value = at(printed, key)
    if (computed.has(key)) {
      // broker.tls_host only exists with a TLS listener.
      if (key !== 'broker.tls_host') t.type(value, 'string', `${key}: computed, printed`)
    } else if (dflt === undefined) t.equal(value, undefined, `${key}: no default, not printed`)
    else t.same(value, dflt, `${key} = ${JSON.stringify(dflt)}`)
  }
  const amqp = parseConfig('[amqp]\nurl_env = "AMQP_URL"\n', null, {})
  if (!amqp.ok) throw new Error(amqp.error)
  const printedAmqp = parseToml(printConfig(amqp.config, false).out)
  for (const [key, dflt] of table)
    if (key.startsWith('amqp.') && dflt !== undefined) t.same(at(printedAmqp, key), dflt, `${key} = ${dflt}`)
})

t.test('a value for every setting is printed back under its own key', async (t) => {
  // One document setting each key of the sections the code resolves key by key (not [chain],
  // printed as written, nor [[boards]], checked by config-print.test.ts).
  const doc = parseToml(`
[hub]
sops_dir = "/s"
data_dir = "/d"
log_level = "debug"
[broker]
url = "mqtt://10.0.0.9:1883"
host = "10.0.0.1"
port = 1
ws_port = 2
client_id = "c"
username = "u"
tls_host = "10.0.0.2"
tls_port = 3
wss_port = 4
tls_cert = "/c.pem"
tls_key = "/k.pem"
[api]
port = 5
[metrics]
host = "127.0.0.1"
port = 6
token_file = "/t"
[console]
enabled = false
host = "127.0.0.1"
port = 7
tls_cert = "/cc.pem"
tls_key = "/ck.pem"
[webhook]
enabled = false
host = "127.0.0.1"
port = 8
body_limit = 9
rate_limit = 10
secrets = { "/h" = { env = "H" } }
[cron]
timezone = "UTC"
catch_up = false
[filesystem]
debounce_ms = 11
[tools]
http_request = false
http_timeout_ms = 12
board_timeout_ms = 13
[disk]
reserve_mb = 14
reserve_percent = 15
[history]
max_age_days = 16
max_mb = 17
segment_mb = 18
commit_window_ms = 19
[flash]
avrdude = "/a"
hello_timeout_ms = 20000
keep_images = 21
[agent]
url = "http://m/v1"
model = "m"
api_key_env = "K"
max_rounds = 22
timeout_ms = 23
[homeassistant]
discovery = true
prefix = "ha"
node_id = "n"
[amqp]
url = "amqp://h/v"
password_file = "/p"
exchange = "x"
queue = "q"
prefetch = 24
`)
  const r = parseConfig(stringify(doc), null, {})
  if (!r.ok) throw new Error(r.error)
  const printed = parseToml(printConfig(r.config, false).out)
  for (const key of table.keys()) {
    const [section] = key.split('.')
    if (section === 'chain' || section === 'boards') continue
    // Two alternatives the document above gives the other of.
    if (key === 'amqp.url_env' || key === 'amqp.password_env') continue
    if (key === 'broker.password') continue // never printed (config-print.test.ts)
    t.not(at(doc, key), undefined, `${key}: the document above sets it`)
    t.same(at(printed, key), at(doc, key), key)
  }
})

t.test('[chain] is typed: unknown keys and wrong types are named when the file is read', async (t) => {
  const cases: [string, string][] = [
    ['[chain]\nrpc = "http://x"\n', 'hub.toml: chain.rpc: unknown field'],
    [
      '[chain]\nvalidation_registry = "0x12"\n',
      'hub.toml: chain.validation_registry: must be a 0x-prefixed 20-byte address',
    ],
    ['[chain]\nagent_id = "seven"\n', 'hub.toml: chain.agent_id: must be a decimal agent id'],
    ['[chain]\nmax_fee_gwei = 0\n', 'hub.toml: chain.max_fee_gwei: must be a positive number'],
    [
      '[chain]\nmax_batch_lines = 1.5\n',
      'hub.toml: chain.max_batch_lines: must be a whole number, 1 or more',
    ],
    ['[chain]\nschema = "record.json"\n', 'hub.toml: chain.schema: must be object'],
  ]
  for (const [text, error] of cases)
    t.same(parseConfig(text, null, {}), { ok: false, code: 'BAD_CONFIG', error }, text)
  for (const id of ['7', '"7"']) {
    const r = parseConfig(`[chain]\nagent_id = ${id}\n`, null, {})
    t.ok(r.ok, `agent_id = ${id}`)
  }
})

t.test("hub/README.md's hub.toml reference names every setting, with its default", async (t) => {
  const readme = await readFile(join(root, 'hub/README.md'), 'utf8')
  const from = readme.indexOf('## hub.toml')
  const block = readme.slice(readme.indexOf('```toml', from), readme.indexOf('\n```\n', from))
  // The block's lines by section: a `[name]` or `# [name]` header starts one.
  const bySection = new Map<string, string>()
  let current = ''
  for (const line of block.split('\n')) {
    const head = /^#?\s*\[\[?([a-z_.]+)\]\]?/.exec(line)
    if (head) current = head[1] as string
    bySection.set(current, `${bySection.get(current) ?? ''}\n${line}`)
  }
  for (const [key, dflt] of table) {
    const [section, name] = key.split('.') as [string, string | undefined]
    const text = bySection.get(section) ?? ''
    if (name === undefined) {
      t.ok(bySection.has(section), `[${section}] is there`)
      continue
    }
    if (name === 'secrets') {
      t.ok(bySection.has('webhook.secrets'), `[webhook.secrets] is there`)
      continue
    }
    t.match(text, new RegExp(`(^|[\\s#,])${name}(\\s|,|$)`, 'm'), `${key} is there`)
    if (dflt !== undefined && !computed.has(key))
      t.match(text, `${name} = ${stringify({ v: dflt }).slice(4).trim()}`, `${key} with its default`)
  }
})
