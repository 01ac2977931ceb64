import t from 'tap'
import { parseSopToml } from '../../sops/toml-sop.ts'
import { parseSop } from '../../sops/parse.ts'

t.test('the defaults of sops/FORMAT.md, "Settings"', async (t) => {
  const r = parseSopToml('[sop]\nname = "x"\ndescription = "d"\n', 'SOP.toml')
  t.same(r.diagnostics, [])
  t.same(r.settings, {
    name: 'x',
    description: 'd',
    version: undefined,
    priority: 'normal',
    executionMode: 'supervised',
    cooldownSecs: 0,
    maxConcurrent: 1,
    admissionPolicy: 'parallel',
  })
  t.same(r.triggers, [])
})

t.test('every trigger type with its fields', async (t) => {
  const text = `[sop]
name = "all"
description = "every trigger"
agent = "a"
version = "2"
priority = "critical"
execution_mode = "step_by_step"
cooldown_secs = 5
max_concurrent = 3
admission_policy = "coalesce"

[[triggers]]
type = "peripheral"
board = "vend1"
signal = "coin"
condition = "$.amount >= 1"

[[triggers]]
type = "manual"

[[triggers]]
type = "cron"
expression = "*/5 * * * 1-5"

[[triggers]]
type = "webhook"
path = "/hooks/door"

[[triggers]]
type = "mqtt"
topic = "sensors/+/temperature"
condition = "$.celsius > 30"

[[triggers]]
type = "mqtt"
topic = "plant/#"

[[triggers]]
type = "filesystem"
path = "/data/**/*.csv"
events = ["created", "modified"]

[[triggers]]
type = "channel"
channel = "ops"
alias = "night-shift"
condition = "> 0"

[[triggers]]
type = "amqp"
routing_key = "orders.*.created.#"
`
  const r = parseSopToml(text, 'SOP.toml')
  t.same(r.diagnostics, [])
  t.equal(r.settings.priority, 'critical')
  t.equal(r.settings.executionMode, 'step_by_step')
  t.equal(r.settings.cooldownSecs, 5)
  t.equal(r.settings.maxConcurrent, 3)
  t.equal(r.settings.admissionPolicy, 'coalesce')
  t.equal(r.settings.version, '2')
  const strip = r.triggers.map(({ origin, ...rest }) => ({ ...rest, line: origin.line }))
  t.same(strip, [
    { type: 'peripheral', board: 'vend1', signal: 'coin', condition: '$.amount >= 1', line: 12 },
    { type: 'manual', line: 18 },
    { type: 'cron', expression: '*/5 * * * 1-5', line: 21 },
    { type: 'webhook', path: '/hooks/door', line: 25 },
    { type: 'mqtt', topic: 'sensors/+/temperature', condition: '$.celsius > 30', line: 29 },
    { type: 'mqtt', topic: 'plant/#', condition: '', line: 34 },
    { type: 'filesystem', path: '/data/**/*.csv', events: ['created', 'modified'], condition: '', line: 38 },
    { type: 'channel', channel: 'ops', condition: '> 0', alias: 'night-shift', line: 43 },
    { type: 'amqp', routing_key: 'orders.*.created.#', condition: '', line: 49 },
  ])
})

t.test('multi-line strings and arrays do not throw off key lines', async (t) => {
  const text = `[sop]
name = "m"
description = """
line one
colour = "not a key"
"""
tags = [
  "a",
  "b",
]
agent = 7
`
  const r = parseSopToml(text, 'SOP.toml')
  t.same(
    r.diagnostics.map((d) => [d.line, d.message.split(' (')[0]]),
    [
      [7, 'unknown key "tags" in [sop]'],
      [11, '"agent" must be a string, got an integer'],
    ],
  )
})

t.test('bad shapes: [sop] not a table, triggers not an array, trigger without type', async (t) => {
  t.same(
    parseSopToml('sop = 3\n', 'f').diagnostics.map((d) => [d.line, d.message]),
    [[1, '"sop" must be a table ([sop]), got an integer']],
  )
  const r = parseSopToml('triggers = "x"\n[sop]\nname = "a"\ndescription = "b"\n', 'f')
  t.same(
    r.diagnostics.map((d) => [d.line, d.message.split(' (')[0]]),
    [[1, '"triggers" must be an array of tables']],
  )
  const n = parseSopToml('[sop]\nname = "a"\ndescription = "b"\n[[triggers]]\nboard = "x"\n', 'f')
  t.same(
    n.diagnostics.map((d) => [d.line, d.message.split(' (')[0]]),
    [[4, 'trigger 1 has no "type"']],
  )
})

t.test('unknown tools are warnings, not errors; the SOP still loads', async (t) => {
  const r = parseSop({
    dir: 'd',
    tomlPath: 'd/SOP.toml',
    tomlText: '[sop]\nname = "p"\ndescription = "plugin tools"\n',
    mdPath: 'd/SOP.md',
    mdText:
      '## Steps\n\n1. **Use plugin**\n   - tools: acme_laser, wait\n   - call: {"tool":"acme_laser","args":{}}\n',
  })
  t.same(
    r.diagnostics.map((d) => [d.line, d.severity, d.message.split(' (')[0]]),
    [[4, 'warning', 'tools: unknown tool "acme_laser"']],
  )
})
