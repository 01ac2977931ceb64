// Fingerprinted once-only marks (engine-api: `once.fingerprint`), the way the MQTT session uses
// them: a copy of an admitted event under the same key and fingerprint is a repeat, after a
// restart too; another event under the same key (a reused or shared packet id) is new and keeps
// the first one's mark; a forgotten mark no longer holds the event back.
import t from 'tap'
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
