// Fingerprinted once-only marks (engine-api: `once.fingerprint`), the way the MQTT session uses
// them: a copy of an admitted event under the same key and fingerprint is a repeat, after a
// restart too; another event under the same key (a reused or shared packet id) is new and keeps
// the first one's mark; a forgotten mark no longer holds the event back.
import t from 'tap'
import { OnceMarks } from '../../hub/engine/once-marks.ts'
import { flat } from '../../hub/memory/flat.ts'
import { fullCollection } from '../../hub/memory/give-back.ts'
import { messageFingerprint } from '../../hub/triggers/intake.ts'
import { startEngine } from './engine-helpers.ts'
import { call, event, sop, step } from './helpers.ts'

const S = sop({ name: 'm', maxConcurrent: 100, steps: [step(1, { calls: [call('echo', { x: 1 })] })] })

const mqttEvent = (payload: string, fingerprint: string) => ({
  ...event(payload),
  once: { key: 'mqtt hub 17', check: true, fingerprint },
})

t.test('a repeat is recognised by key and fingerprint, across a restart, until forgotten', async (t) => {
  const first = await startEngine(t, [S])
  const a = await first.engine.trigger('m', mqttEvent('a', 'fp-a'))
  t.match(a, { outcome: 'started' })
  t.notOk(a.duplicate)
  t.same(await first.engine.trigger('m', mqttEvent('a', 'fp-a')), { ...a, duplicate: true }, 'the copy')
  // Another event under the same packet id: new, and it does not push out the first one's mark.
  const b = await first.engine.trigger('m', mqttEvent('b', 'fp-b'))
  t.match(b, { outcome: 'started' })
  t.not(b.runId, a.runId)
  await first.engine.idle()
  await first.close()

  const again = await startEngine(t, [S], { dbPath: first.dir })
  t.same(
    await again.engine.trigger('m', mqttEvent('a', 'fp-a')),
    { ...a, duplicate: true },
    'after a restart',
  )
  t.same(await again.engine.trigger('m', mqttEvent('b', 'fp-b')), { ...b, duplicate: true })
  again.engine.forgetOnce?.([{ sop: 'm', key: 'mqtt hub 17', fingerprint: 'fp-a' }])
  const c = await again.engine.trigger('m', mqttEvent('a', 'fp-a'))
  t.match(c, { outcome: 'started' }, 'forgotten: the same content under the key is a new event')
  t.notOk(c.duplicate)
  t.same(await again.engine.trigger('m', mqttEvent('b', 'fp-b')), { ...b, duplicate: true }, 'b still marked')
  await again.engine.idle()
  t.equal((await again.engine.listRuns({ sop: 'm' })).length, 3, 'three runs: a, b, and a again')
})

t.test('any fingerprint is recognised, after a restart too, and only its own', async (t) => {
  // Marks are held as the JSON the store writes (hub/engine/once-marks.ts); a fingerprint that
  // JSON escapes, or one that appears inside another's text, must still match only itself.
  const odd = ['q"uote', 'back\\slash', 'ctl\u0001\u0002', 'fp', '"fp"']
  const first = await startEngine(t, [S])
  const decided = []
  for (const fp of odd) decided.push(await first.engine.trigger('m', mqttEvent(fp, fp)))
  for (const d of decided) t.match(d, { outcome: 'started' })
  t.equal(new Set(decided.map((d) => d.runId)).size, odd.length, 'each a run of its own')
  await first.engine.idle()
  await first.close()
  const again = await startEngine(t, [S], { dbPath: first.dir })
  // Under one key the latest four are kept: the other four are repeats, the first was let go.
  for (const [i, fp] of odd.entries())
    if (i > 0)
      t.same(await again.engine.trigger('m', mqttEvent(fp, fp)), { ...decided[i], duplicate: true }, fp)
  again.engine.forgetOnce?.([{ sop: 'm', key: 'mqtt hub 17', fingerprint: 'fp' }])
  t.same(
    await again.engine.trigger('m', mqttEvent('"fp"', '"fp"')),
    { ...decided[4], duplicate: true },
    'forgetting "fp" left the mark of "\\"fp\\"" alone',
  )
  t.notOk((await again.engine.trigger('m', mqttEvent('fp', 'fp'))).duplicate, '"fp" forgotten')
  t.notOk(
    (await again.engine.trigger('m', mqttEvent(odd[0]!, odd[0]!))).duplicate,
    'the oldest of five let go',
  )
  await again.engine.idle()
})

t.test(
  'a mark forgotten while its key is being admitted again is forgotten once that is through',
  async (t) => {
    // A publisher's packet ids come round within FORGET_AFTER_MS under a burst: the forgetting of
    // the first message's mark meets the admission of the next one under the same key.
    const { engine } = await startEngine(t, [S])
    const a = await engine.trigger('m', mqttEvent('a', 'fp-a'))
    const next = engine.trigger('m', mqttEvent('b', 'fp-b'))
    engine.forgetOnce?.([{ sop: 'm', key: 'mqtt hub 17', fingerprint: 'fp-a' }])
    t.match(await next, { outcome: 'started' })
    await new Promise((r) => setImmediate(r))
    const again = await engine.trigger('m', mqttEvent('a', 'fp-a'))
    t.notOk(again.duplicate, 'fp-a was forgotten: the same content is a new event')
    t.not(again.runId, a.runId)
    t.match(await engine.trigger('m', mqttEvent('b', 'fp-b')), { duplicate: true }, 'fp-b still marked')
    await engine.idle()
  },
)

t.test('OnceMarks: every key forgotten leaves nothing held; at most four marks a key', async (t) => {
  const marks = new OnceMarks()
  const d = (n: number) => ({ outcome: 'started' as const, runId: `run-${n}`, reason: 'slot free' })
  const key = (n: number) => `from pub ${n % 2_000}`
  for (let n = 0; n < 10_000; n++) marks.set('m', key(n), marks.with('m', key(n), `fp-${n}`, d(n)))
  t.equal(marks.size, 2_000, 'one entry a key')
  t.equal(marks.list('m', key(7)).length, 4, 'the latest four of five')
  t.same(marks.decision('m', key(7), 'fp-8007'), d(8007))
  t.equal(marks.decision('m', key(7), 'fp-7'), undefined, 'the oldest let go')
  t.equal(marks.decision('other', key(7), 'fp-8007'), undefined, 'per SOP')
  const listed = marks.list('m', key(7))
  listed.pop()
  t.equal(marks.list('m', key(7)).length, 4, 'a list handed out is a copy')
  t.equal(marks.forget('m', key(7), 'fp-7'), null, 'nothing to forget')
  for (let n = 2_000; n < 10_000; n++) marks.forget('m', key(n), `fp-${n}`)
  t.equal(marks.size, 0, 'all forgotten: no key left')
  const again = new OnceMarks([['m\u0000from pub 1', [{ fp: 'x', d: d(1) }]]])
  t.same(again.decision('m', 'from pub 1', 'x'), d(1), "read back from the store's keys")
})

const gc = fullCollection()
const noGc = gc ? {} : { skip: "V8 refused --expose-gc for one context: the heap can't be measured" }

t.test('OnceMarks: a mark costs the heap its text, not the parts it was built from', noGc, async (t) => {
  // A busy hub keeps a mark for every message of the last FORGET_AFTER_MS (tens of thousands):
  // kept as V8 builds JSON.stringify's output (a tree of parts), each cost about 310 bytes.
  if (!gc) return
  const n = 20_000
  const d = (i: number) => ({
    outcome: 'started' as const,
    runId: `0193a7c2-5b1e-7abc-9def-${String(100_000_000_000 + i)}`,
    reason: `slot free (${i % 1000}/100000 active)`,
  })
  const fps = Array.from({ length: n }, (_, i) => messageFingerprint(`in/${i}`, Buffer.from(String(i))))
  const keys = Array.from({ length: n }, (_, i) => flat(`from board-kitchen-01 ${i}`))
  gc()
  gc()
  const before = process.memoryUsage().heapUsed
  const marks = new OnceMarks()
  for (let i = 0; i < n; i++) marks.set('m', keys[i]!, marks.with('m', keys[i]!, fps[i]!, d(i)))
  gc()
  gc()
  const perMark = (process.memoryUsage().heapUsed - before) / n
  t.equal(marks.size, n)
  t.ok(perMark < 250, `${perMark.toFixed(0)} bytes of heap a mark (its JSON is about 150 characters)`)
  t.same(marks.decision('m', keys[7]!, fps[7]!), d(7), 'and each still answers')
})

t.test('flat: the same string, whatever it holds', async (t) => {
  const made = [
    '',
    'a',
    `${'x'.repeat(40)}${Math.random()}`,
    'ü €',
    '\u{1F600} emoji',
    'lone \ud800 surrogate',
  ]
  for (const s of made) t.equal(flat(s), s, JSON.stringify(s))
  t.equal(flat(JSON.stringify({ a: '\udfff', b: 'ß' })), '{"a":"\\udfff","b":"ß"}')
})

t.test('flat: copies in the V8 heap, taking no memory outside it', async (t) => {
  const before = process.memoryUsage().arrayBuffers
  const kept = Array.from({ length: 2000 }, (_, i) => flat(`${'mark '.repeat(40)}${i}`))
  const grown = process.memoryUsage().arrayBuffers - before
  t.equal(kept.length, 2000)
  t.ok(grown < 8192, `array buffers grew ${grown} bytes while 2,000 strings of 200 characters were copied`)
})
