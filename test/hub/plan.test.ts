import t from 'tap'
import { buildPlan, cronError, webhookPathError } from '../../hub/triggers/plan.ts'
import { dispatchMessage, subscriptionFilters } from '../../hub/triggers/dispatch.ts'
import { sop } from './fake-engine.ts'

const always = { matches: (c: string) => c.trim() === '' || c === 'yes' }

t.test("a bad trigger is reported with file and line and skipped; the SOP's others still plan", async (t) => {
  const plan = buildPlan([
    sop('a', [
      { type: 'peripheral', board: 'vend/1', signal: 'coin', condition: '' },
      { type: 'mqtt', topic: 'x/#/y', condition: '' },
      { type: 'cron', expression: '* * * * * *' },
      { type: 'cron', expression: 'not a cron at all' },
      { type: 'webhook', path: 'no-slash' },
      { type: 'peripheral', board: 'vend1', signal: 'coin', condition: '' },
    ]),
  ])
  t.equal(plan.peripheral.length, 1)
  t.equal(plan.peripheral[0]?.filter, 'boards/vend1/coin')
  t.equal(plan.mqtt.length, 0)
  t.equal(plan.cron.length, 0)
  t.equal(plan.webhook.size, 0)
  t.equal(plan.problems.length, 5)
  for (const p of plan.problems) {
    t.equal(p.file, '/sops/a/SOP.toml')
    t.type(p.line, 'number')
  }
  t.match(
    plan.problems.map((p) => p.message).join('\n'),
    /board "vend\/1"[\s\S]*"#" must be[\s\S]*exactly five fields[^\n]*found 6[\s\S]*invalid[\s\S]*must start with "\/"/,
  )
})

t.test('a webhook path is answered by one SOP; the second is reported', async (t) => {
  const plan = buildPlan([
    sop('b', [{ type: 'webhook', path: '/hook' }]),
    sop('a', [{ type: 'webhook', path: '/hook' }]),
  ])
  t.equal(plan.webhook.get('/hook')?.sop, 'a', 'SOPs are planned in name order, so the winner is stable')
  t.match(plan.problems[0]?.message, /already answered by SOP "a"/)
})

t.test('cron and webhook field checks', async (t) => {
  t.equal(cronError('*/5 * * * *'), null)
  t.match(cronError(''), /five fields .*found 0/)
  t.match(cronError('61 * * * *'), /invalid/)
  t.equal(webhookPathError('/a/b'), null)
  t.match(webhookPathError('/a?b=1'), /must not contain/)
})

t.test(
  'dispatch: peripheral exact topic, mqtt wildcard, condition, one run per SOP per message',
  async (t) => {
    const plan = buildPlan([
      sop('coin', [{ type: 'peripheral', board: 'vend1', signal: 'coin', condition: '' }]),
      sop('guarded', [{ type: 'peripheral', board: 'vend1', signal: 'coin', condition: 'no' }]),
      sop('any', [{ type: 'mqtt', topic: 'boards/+/coin', condition: '' }]),
      sop('both', [
        { type: 'peripheral', board: 'vend1', signal: 'coin', condition: '' },
        { type: 'mqtt', topic: 'boards/#', condition: '' },
      ]),
    ])
    t.same(dispatchMessage(plan, always, 'boards/vend1/coin', '1'), [
      { sop: 'both', type: 'peripheral' },
      { sop: 'coin', type: 'peripheral' },
      { sop: 'any', type: 'mqtt' },
    ])
    t.same(dispatchMessage(plan, always, 'boards/vend2/coin', '1'), [
      { sop: 'any', type: 'mqtt' },
      { sop: 'both', type: 'mqtt' },
    ])
    t.same(dispatchMessage(plan, always, 'other', '1'), [])
    t.same(subscriptionFilters(plan), ['boards/#'])
  },
)
