// One spelling of the config: `svc hub config` prints hub.toml's own keys (snake_case), and what
// it prints reads back to the same config and prints the same again; the hub starts on it.
import t from 'tap'
import { join } from 'node:path'
import { writeFile } from 'node:fs/promises'
import { main } from '../../cli/main.ts'
import { printConfig } from '../../cli/hub.ts'
import { type HubConfig, parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { silentLog } from '../../hub/log.ts'
import { tempDir } from '../helpers/tmp.ts'

function parsed(text: string, file: string | null, env: NodeJS.ProcessEnv): HubConfig {
  const r = parseConfig(text, file, env)
  if (!r.ok) throw new Error(r.error)
  return r.config
}

/** Every key of a TOML document's tables (webhook paths excepted: the SOP author chose them). */
function keys(doc: unknown, at = ''): string[] {
  if (Array.isArray(doc)) return doc.flatMap((d, i) => keys(d, `${at}[${i}]`))
  if (typeof doc !== 'object' || doc === null) return []
  return Object.entries(doc).flatMap(([k, v]) =>
    at === 'webhook.secrets' ? [] : [`${at}${at ? '.' : ''}${k}`, ...keys(v, `${at}${at ? '.' : ''}${k}`)],
  )
}

const FULL = (home: string) => `[hub]
sops_dir = "${join(home, 'sops')}"
data_dir = "data"
log_level = "warn"

[broker]
host = "127.0.0.1"
port = 0
ws_port = 0
client_id = "hub-under-test"
tls_port = 0
tls_cert = "tls/cert.pem"
tls_key = "tls/key.pem"

[api]
port = 0

[webhook]
port = 0
body_limit = 2048
rate_limit = 0

[webhook.secrets]
"/hooks/Order" = { env = "ORDER_HOOK_SECRET" }
"/hooks/b" = { file = "b.secret" }

[cron]
timezone = "Europe/Berlin"
catch_up = false

[filesystem]
debounce_ms = 50

[tools]
http_request = false
http_timeout_ms = 1000
board_timeout_ms = 2000

[[boards]]
name = "vend1"
port = "/dev/ttyUSB0"
baud = 9600
line_cap = 2048
heartbeat_ms = 0
simulate = true

[[boards]]
name = "uno1"
port = "/dev/ttyACM0"
kind = "firmata"
profile = { signals = [
  { signal = "door", type = "digital", pin = 2, invert = true },
  { signal = "temp", type = "analog", pin = "A0", threshold = 4, interval_ms = 500 },
] }

[chain]
rpc_url = "http://127.0.0.1:8545"

[agent]
url = "http://127.0.0.1:8080/v1"
model = "m"
api_key_env = "OPENAI_API_KEY"
max_rounds = 4
timeout_ms = 3000
`

t.test('print, parse, print again: the same text, the same config, snake_case keys only', async (t) => {
  const home = await tempDir(t)
  const env = { SVC_HOME: home }
  for (const [what, text] of [
    ['no file (defaults)', ''],
    ['every section set', FULL(home)],
  ] as const) {
    const file = join(home, 'hub.toml')
    const first = parsed(text, file, env)
    const printed = printConfig(first, false).out
    const second = parsed(printed, file, env)
    t.same(second, first, `${what}: the printed file reads back to the same config`)
    t.equal(printConfig(second, false).out, printed, `${what}: and prints the same again`)
    const doc = JSON.parse(printConfig(first, true).out) as unknown
    const camel = keys(doc).filter((k) => /[A-Z]/.test(k))
    t.same(camel, [], `${what}: no camelCase key`)
  }
  const full = printConfig(parsed(FULL(home), join(home, 'hub.toml'), env), false).out
  t.match(full, /\nline_cap = 2048\n/)
  t.match(full, /interval_ms = 500/)
  t.match(full, /\ntls_port = 0\n/)
  t.match(full, /"\/hooks\/Order"/, 'webhook paths are kept exactly')
  t.notMatch(full, /lineCap|heartbeatMs|sopsDir|intervalMs|clientId|wsPort/)
})

t.test('svc hub config > hub.toml: the hub reads it back unchanged, and starts on it', async (t) => {
  const home = await tempDir(t)
  await writeFile(
    join(home, 'start.toml'),
    `[hub]\nsops_dir = "sops"\n[broker]\nport = 0\n[api]\nport = 0\n[console]\nport = 0\n[webhook]\nport = 0\n[[boards]]\nname = "sim1"\nport = "/dev/svc-sim-sim1"\nline_cap = 512\nsimulate = true\n`,
  )
  const run = async (args: string[]) => {
    const out: string[] = []
    const err: string[] = []
    const code = await main(['hub', 'config', ...args], {
      out: (s) => void out.push(s),
      err: (s) => void err.push(s),
      env: { SVC_HOME: home },
      cwd: home,
    })
    return { code, out: out.join(''), err: err.join('') }
  }
  const first = await run(['--config', join(home, 'start.toml')])
  t.equal(first.code, 0, first.err)
  await writeFile(join(home, 'hub.toml'), first.out)
  const again = await run(['--config', join(home, 'hub.toml')])
  t.equal(again.code, 0, again.err)
  t.equal(again.out, first.out, 'printed from the printed file: unchanged')

  const cfg = parseConfig(first.out, join(home, 'hub.toml'), { SVC_HOME: home })
  if (!cfg.ok) throw new Error(cfg.error)
  // The parts `svc hub` runs with: the real bridge plays the simulated board.
  const hub = await startHub(cfg.config, silentLog, realParts({ SVC_HOME: home }, cfg.config))
  t.teardown(() => hub.close())
  t.match(hub.brokerUrl, /^mqtt:\/\/127\.0\.0\.1:\d+$/, 'the hub runs on the printed file')
})

t.test('secrets are never printed; the output says which were left out', async (t) => {
  const home = await tempDir(t)
  const c = parsed('[broker]\nusername = "hub"\npassword = "hunter2"\n', join(home, 'hub.toml'), {
    SVC_HOME: home,
  })
  const toml = printConfig(c, false)
  t.notMatch(toml.out, /hunter2/)
  t.match(toml.out, /^# never printed: broker\.password \(set in .*hub\.toml\)$/m)
  t.match(toml.out, /\nusername = "hub"\n/)
  const json = printConfig(c, true)
  t.notMatch(json.out, /hunter2/)
  t.match(json.note, /never printed: broker\.password/)
})

t.test('hub.toml errors name keys as hub.toml spells them', async (t) => {
  const cases: [string, RegExp][] = [
    [
      '[[boards]]\nname = "a"\nport = "/x"\nlineCap = 2048\n',
      /boards\[0\]\.lineCap: unknown field \(hub\.toml keys are snake_case: line_cap\)/,
    ],
    ['[broker]\nwsPort = 1\n', /broker\.wsPort: unknown field \(hub\.toml keys are snake_case: ws_port\)/],
    [
      '[[boards]]\nname = "a"\nport = "/x"\nheartbeat_ms = 10\n',
      /boards\[0\]\.heartbeat_ms: must be 0 \(off\) or an integer >= 50/,
    ],
    [
      '[[boards]]\nname = "a"\nport = "/x"\nkind = "firmata"\nprofile = { signals = [{ signal = "t", type = "analog", pin = "A0", intervalMs = 5 }] }\n',
      /intervalMs: unknown field \(hub\.toml keys are snake_case: interval_ms\)/,
    ],
  ]
  for (const [text, re] of cases) {
    const r = parseConfig(text, '/etc/svc/hub.toml', {})
    t.equal(r.ok, false, text)
    if (!r.ok) {
      t.match(r.error, re)
      t.notMatch(r.error.replace(/unknown field \(.*\)/, ''), /heartbeatMs|lineCap\b(?!:)/)
    }
  }
})
