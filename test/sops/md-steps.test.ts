import t from 'tap'
import { parseStepsMarkdown } from '../../sops/md-steps.ts'

const parse = (md: string) => parseStepsMarkdown(md, 'SOP.md')

t.test('titles, separators, body lines and unknown bullets', async (t) => {
  const r = parse(`# X

Intro paragraph.

## steps

1. **Read** — read the sensor
   - note: be gentle
   more text for the body
2. **Write** – with an en dash
3. **Check** - with a hyphen
4. **Done:** colon inside bold
5. Plain first line without bold
   - Just an instruction bullet

## Notes

1. not a step
`)
  t.same(r.diagnostics, [])
  t.same(
    r.steps.map((s) => s.title),
    ['Read', 'Write', 'Check', 'Done:', 'Plain first line without bold'],
  )
  t.same(
    r.steps.map((s) => s.number),
    [1, 2, 3, 4, 5],
  )
  t.equal(r.steps[0]?.body, 'read the sensor\nnote: be gentle\nmore text for the body')
  t.equal(r.steps[1]?.body, 'with an en dash')
  t.equal(r.steps[2]?.body, 'with a hyphen')
  t.equal(r.steps[3]?.body, 'colon inside bold')
  t.equal(r.steps[4]?.body, 'Just an instruction bullet')
  t.same(
    r.steps.map((s) => s.origin.line),
    [7, 10, 11, 12, 13],
  )
})

t.test('every property bullet, with - or _ in keys', async (t) => {
  const r = parse(`## Steps

1. **All** body
   - tools: board_send, wait
   - allow-tools: board_send,wait
   - deny_tools: http_request
   - requires-confirmation: true
   - kind: capability
   - call: {"tool":"board_send","args":{"board":"b","cmd":"x"}}
   - call: {"tool":"wait","args":{"ms":"{{calls.0.ms}}"}}
   - input: {"type":"object","required":["slot"]}
   - output: {"type":"object","properties":{"ok":{"type":"boolean"}}}
   - when: $.trigger.amount >= 1
   - switch: hot>$.x > 3>2; warm>$.x >= 1 >2; other>>
   - depends-on: 2
   - on-failure: retry:3
   - mode: step_by_step
   - agent: ops
   - prompt: Go ahead?
   - decide: Is the slot empty?
2. **Second**
   - next: 1
   - unless_decided: 1
   - on_failure: goto:1
   - terminal: false
`)
  t.same(r.diagnostics, [])
  const s = r.steps[0]!
  t.same(s.tools, ['board_send', 'wait'])
  t.same(s.allowTools, ['board_send', 'wait'])
  t.same(s.denyTools, ['http_request'])
  t.equal(s.requiresConfirmation, true)
  t.equal(s.kind, 'capability')
  t.same(
    s.calls.map((c) => [c.tool, c.origin.line]),
    [
      ['board_send', 9],
      ['wait', 10],
    ],
  )
  t.same(s.input, { type: 'object', required: ['slot'] })
  t.equal(s.when, '$.trigger.amount >= 1')
  t.same(s.switch, [
    { name: 'hot', condition: '$.x > 3', target: 2 },
    { name: 'warm', condition: '$.x >= 1', target: 2 },
    { name: 'other', condition: '', target: null },
  ])
  t.same(s.dependsOn, [2])
  t.same(s.onFailure, { kind: 'retry', count: 3 })
  t.equal(s.mode, 'step_by_step')
  t.equal(s.agent, 'ops')
  t.equal(s.prompt, 'Go ahead?')
  t.equal(s.decide, 'Is the slot empty?')
  t.equal(s.lines.on_failure, 16)
  t.equal(s.lines.call, 9)
  const s2 = r.steps[1]!
  t.equal(s2.next, 1)
  t.equal(s2.unlessDecided, 1)
  t.same(s2.onFailure, { kind: 'goto', step: 1 })
  t.equal(s2.terminal, false)
})

t.test(
  'JSON with markdown characters stays exact; multi-line call values; code blocks are body',
  async (t) => {
    const r = parse(`## Steps

1. **Send**
   - call: {"tool":"mqtt_publish","args":{"topic":"a/*b*/_c_","payload":"\\\\n **x**","qos":1,"retain":false}}
   - call:
     {"tool":"wait",
      "args":{"ms":5}}
   \`\`\`
   - call: not a bullet, this is code
   \`\`\`
   - tools: wait
`)
    t.same(r.diagnostics, [])
    const s = r.steps[0]!
    t.same(
      s.calls.map((c) => c.args),
      [{ topic: 'a/*b*/_c_', payload: '\\n **x**', qos: 1, retain: false }, { ms: 5 }],
    )
    t.match(s.body, /- call: not a bullet, this is code/)
    t.same(s.tools, ['wait'])
  },
)

t.test('a second Steps heading, stray bullets and empty values are reported at their lines', async (t) => {
  const r = parse(`## Steps

- **not numbered**

1. **One**
   - tools:
   - switch: ;
   - agent:
   - depends_on: 1, x

## Steps

1. **Again**
`)
  const got = r.diagnostics.map((d) => `${d.line}:${d.severity}:${d.message.split(' (')[0]}`)
  t.same(got, [
    '11:error:a second "## Steps" section',
    '3:error:bullet before the first step belongs to no step',
    '6:error:tools: is empty',
    '7:error:switch: has no ports',
    '8:error:agent: is empty',
    '9:error:depends_on: "x" is not a step number',
  ])
})

t.test('the Steps section ends at the next level-2 heading, not at a level-3 one', async (t) => {
  const r = parse(`## Steps

1. **A**

### Detail

2. **B**

## After

3. **C**
`)
  t.same(
    r.steps.map((s) => s.title),
    ['A', 'B'],
  )
})

t.test('property-like text never throws', async (t) => {
  const fc = (await import('fast-check')).default
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.constantFrom(
            '## Steps',
            '1. **T** x',
            '   - call: {',
            '   - switch: a>b>c',
            '```',
            '   - next: 0',
            '   - on_failure: goto:x',
            '',
          ),
          fc.string(),
        ),
        { maxLength: 20 },
      ),
      (lines) => {
        const r = parse(lines.join('\n'))
        return Array.isArray(r.steps) && r.diagnostics.every((d) => d.line >= 1 && d.file === 'SOP.md')
      },
    ),
  )
  t.pass('never threw; every diagnostic located')
})

t.test('written numbers that disagree with positions are a warning at the first one', async (t) => {
  const r = parse('## Steps\n\n1. **A**\n2. **B**\n4. **C**\n5. **D**\n')
  t.same(
    r.diagnostics.map((d) => [d.line, d.severity, d.message.split(' (')[0]]),
    [[5, 'warning', 'this item is written as 4. but is step 3']],
  )
  t.same(parse('## Steps\n\n1. **A**\n1. **B**\n1. **C**\n').diagnostics, [], 'all-ones lists are fine')
})

// sops/FORMAT.md, "Reading the steps": a bullet belongs to the step above it whatever its indentation. A strict
// Markdown reader puts `1.` + 2-space bullets, or `10.` + 3-space ones, in a list of their own;
// the gate, call and route in them must still reach the step.
t.test('a bullet belongs to the step above it whatever its indentation', async (t) => {
  const two = parse(`## Steps

1. **Dispense** — open the slot
  - requires_confirmation: true
  - call: {"tool":"echo","args":{"n":1}}
2. **Attest**
  - call: {"tool":"echo","args":{"n":2}}
  - terminal: true
`)
  t.same(two.diagnostics, [])
  t.same(
    two.steps.map((s) => [s.title, s.body, s.requiresConfirmation, s.calls.length, s.terminal]),
    [
      ['Dispense', 'open the slot', true, 1, false],
      ['Attest', '', false, 1, true],
    ],
  )
  t.equal(two.steps[0]?.lines.requires_confirmation, 4)

  const items = Array.from(
    { length: 9 },
    (_, i) => `${i + 1}. **S${i + 1}**\n   - call: {"tool":"echo","args":{}}`,
  )
  const ten = parse(`## Steps

${items.join('\n')}
10. **Tenth**
   - requires_confirmation: true
   - call: {"tool":"echo","args":{"n":10}}
   - next: 1
11. **Eleventh**
\t- mode: step_by_step
\t- terminal: true
12. **Twelfth**
- switch: a>>1
`)
  t.same(ten.diagnostics, [])
  const s10 = ten.steps[9]!
  t.same([s10.title, s10.requiresConfirmation, s10.calls.length, s10.next], ['Tenth', true, 1, 1])
  t.same([ten.steps[10]?.mode, ten.steps[10]?.terminal], ['step_by_step', true], 'tab-indented bullets')
  t.same(ten.steps[11]?.switch, [{ name: 'a', condition: '', target: 1 }], 'a bullet at column 0')
})

t.test(
  'a bullet indented into Markdown code still belongs to its step; fenced code stays body',
  async (t) => {
    const r = parse(`## Steps

1. **Deep**

        - requires_confirmation: true
2. **Fenced**
   \`\`\`
   - requires_confirmation: true
   \`\`\`
`)
    t.same(r.diagnostics, [])
    t.equal(r.steps[0]?.requiresConfirmation, true)
    t.equal(r.steps[1]?.requiresConfirmation, false)
    t.match(r.steps[1]?.body, /- requires_confirmation: true/)
  },
)

t.test(
  'a bullet before the first step belongs to no step: an error at its line; prose is an introduction',
  async (t) => {
    const r = parse(`## Steps

Do these in order.

  - requires_confirmation: true

1. **Only**
`)
    t.same(
      r.diagnostics.map((d) => [d.line, d.severity, d.message.split(' (')[0]]),
      [[5, 'error', 'bullet before the first step belongs to no step']],
    )
    t.equal(r.steps[0]?.body, '')
  },
)

t.test('titles keep the bold text as written; only a —, – or - separator after it is dropped', async (t) => {
  const r = parse(`## Steps

1. **Check:** the seals
2. **Inspect**: the seals
3. **Open** - the door
4. **Close** --force
`)
  t.same(
    r.steps.map((s) => [s.title, s.body]),
    [
      ['Check:', 'the seals'],
      ['Inspect', ': the seals'],
      ['Open', 'the door'],
      ['Close', '--force'],
    ],
  )
})

t.test('property: a gate bullet at any indentation, after any step number, reaches that step', async (t) => {
  const fc = (await import('fast-check')).default
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 120 }),
      fc.stringMatching(/^[ \t]{0,10}$/),
      fc.boolean(),
      fc.constantFrom('-', '*', '+'),
      (count, indent, blank, mark) => {
        const steps = Array.from({ length: count }, (_, i) => `${i + 1}. **S${i + 1}**`)
        // The gate goes under the last step, after an optional blank line.
        const md = `## Steps\n\n${steps.join('\n')}\n${blank ? '\n' : ''}${indent}${mark} requires_confirmation: true\n`
        const r = parse(md)
        const last = r.steps[count - 1]
        return (
          r.steps.length === count &&
          last?.requiresConfirmation === true &&
          r.steps.filter((s) => s.requiresConfirmation).length === 1 &&
          r.diagnostics.every((d) => d.severity !== 'error')
        )
      },
    ),
    { numRuns: 300 },
  )
  t.pass('every gate attached to the step above it')
})
