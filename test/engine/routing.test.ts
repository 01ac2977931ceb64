// Routing rules (sops/RUNTIME.md, "Routing"), pure, with the real condition language.
import t from 'tap'
import { matches } from '../../sops/conditions.ts'
import {
  MAX_VISITS,
  nextInOrder,
  routeAfterComplete,
  routeAfterFailure,
  routeAfterSkip,
  skipReason,
} from '../../sops/run/routing.ts'
import type { Json } from '../../sops/types.ts'
import { sop, step } from './helpers.ts'

const ev = (c: string, p: Json) => matches(c, p)
const ctx = (steps: Record<string, Json> = {}, decisions: Record<string, boolean> = {}) => ({
  steps,
  trigger: { t: 1 },
  decisions,
})

t.test('next in order, and the end past the last step', async (t) => {
  const s = sop({ steps: [step(1), step(2)] })
  t.same(nextInOrder(s, 1), { kind: 'step', step: 2 })
  t.match(nextInOrder(s, 2), { kind: 'end' })
  t.same(routeAfterComplete(s, s.steps[0]!, ctx(), ev), { kind: 'step', step: 2 })
})

t.test(
  'switch: the first matching port wins; catch-all; no match ends; matched port without target fails',
  async (t) => {
    const sw = step(1, {
      switch: [
        { name: 'big', condition: '$.steps.1.n > 10', target: 3 },
        { name: 'mid', condition: '$.steps.1.n > 5', target: 2 },
        { name: 'none', condition: '$.steps.1.n == 0', target: null },
      ],
    })
    const s = sop({ steps: [sw, step(2), step(3)] })
    t.same(
      routeAfterComplete(s, sw, ctx({ 1: { n: 20 } }), ev),
      { kind: 'step', step: 3 },
      'both match: first wins',
    )
    t.same(routeAfterComplete(s, sw, ctx({ 1: { n: 7 } }), ev), { kind: 'step', step: 2 })
    t.match(routeAfterComplete(s, sw, ctx({ 1: { n: 0 } }), ev), {
      kind: 'fail',
      error: /switch port "none" matched but has no target/,
    })
    t.match(routeAfterComplete(s, sw, ctx({ 1: { n: 1 } }), ev), {
      kind: 'end',
      reason: /no switch port matched/,
    })
    const catchAll = step(1, {
      switch: [
        { name: 'x', condition: '$.steps.1.n > 100', target: 2 },
        { name: 'rest', condition: '', target: 3 },
      ],
    })
    t.same(
      routeAfterComplete(sop({ steps: [catchAll, step(2), step(3)] }), catchAll, ctx({ 1: { n: 1 } }), ev),
      { kind: 'step', step: 3 },
    )
    const bad = step(1, { switch: [{ name: 'x', condition: '', target: 9 }] })
    t.match(routeAfterComplete(sop({ steps: [bad] }), bad, ctx(), ev), {
      kind: 'fail',
      error: /step 9, which does not exist/,
    })
  },
)

t.test('next: jumps; terminal ends; switch is checked before next and terminal', async (t) => {
  const s = sop({ steps: [step(1, { next: 3 }), step(2, { terminal: true }), step(3)] })
  t.same(routeAfterComplete(s, s.steps[0]!, ctx(), ev), { kind: 'step', step: 3 })
  t.match(routeAfterComplete(s, s.steps[1]!, ctx(), ev), { kind: 'end', reason: /terminal/ })
  const both = step(1, { next: 2, terminal: true, switch: [{ name: 'a', condition: '', target: 3 }] })
  t.same(routeAfterComplete(sop({ steps: [both, step(2), step(3)] }), both, ctx(), ev), {
    kind: 'step',
    step: 3,
  })
  const nt = step(1, { next: 2, terminal: true })
  t.same(
    routeAfterComplete(sop({ steps: [nt, step(2)] }), nt, ctx(), ev),
    { kind: 'step', step: 2 },
    'next before terminal',
  )
})

t.test('when: is read after the step runs and guards its routing (sops/RUNTIME.md, "Routing")', async (t) => {
  const loop = step(2, { when: '$.steps.2.left > 0', next: 2 })
  const s = sop({ steps: [step(1), loop, step(3)] })
  t.same(
    routeAfterComplete(s, loop, ctx({ 2: { left: 2 } }), ev),
    { kind: 'step', step: 2 },
    'true: next: as written (the loop idiom reads the step own output)',
  )
  t.same(
    routeAfterComplete(s, loop, ctx({ 2: { left: 0 } }), ev),
    { kind: 'step', step: 3 },
    'false: the next step in order, not next:',
  )
  const last = step(2, { when: '$.steps.2.left > 0', next: 1 })
  t.match(
    routeAfterComplete(sop({ steps: [step(1), last] }), last, ctx({ 2: { left: 0 } }), ev),
    { kind: 'end', reason: /last step.*when: .* is false/ },
    'false on the last step: the run ends',
  )
  const sw = step(1, {
    when: '$.trigger.t > 5',
    switch: [{ name: 'all', condition: '', target: 3 }],
  })
  const s2 = sop({ steps: [sw, step(2), step(3)] })
  t.same(routeAfterComplete(s2, sw, ctx(), ev), { kind: 'step', step: 2 }, 'false bypasses the switch')
  t.same(
    routeAfterComplete(s2, sw, { steps: {}, trigger: { t: 9 }, decisions: {} }, ev),
    { kind: 'step', step: 3 },
    'true: the switch decides',
  )
  const term = step(1, { when: '$.trigger.t > 5', terminal: true })
  t.match(routeAfterComplete(sop({ steps: [term, step(2)] }), term, ctx(), ev), {
    kind: 'end',
    reason: /terminal/,
  })
  t.equal(
    skipReason(step(1, { when: '$.trigger.t > 5' }), ctx(), () => true),
    null,
    'when: never skips',
  )
  t.same(routeAfterSkip(s, step(1, { terminal: true })), {
    kind: 'end',
    reason: 'step 1 was skipped and is terminal',
  })
  t.same(routeAfterSkip(s, s.steps[0]!), { kind: 'step', step: 2 })
})

t.test('depends_on, decide and unless_decided skip with their reasons', async (t) => {
  t.match(
    skipReason(step(3, { dependsOn: [1, 2] }), ctx(), (n) => n === 1),
    /depends_on: step 2 did not complete/,
  )
  t.equal(
    skipReason(step(3, { dependsOn: [1, 2] }), ctx(), () => true),
    null,
  )
  t.match(
    skipReason(step(2, { decide: 'is it big?' }), ctx({}, { 2: false }), () => true),
    /answered no/,
  )
  t.equal(
    skipReason(step(2, { decide: 'is it big?' }), ctx({}, { 2: true }), () => true),
    null,
  )
  t.match(
    skipReason(step(3, { unlessDecided: 2 }), ctx({}, { 2: true }), () => true),
    /unless_decided: step 2/,
  )
  t.equal(
    skipReason(step(3, { unlessDecided: 2 }), ctx({}, { 2: false }), () => true),
    null,
  )
})

t.test('on_failure: fail, retry:N then fail, goto', async (t) => {
  const s = sop({
    steps: [
      step(1),
      step(2, { onFailure: { kind: 'retry', count: 2 } }),
      step(3, { onFailure: { kind: 'goto', step: 1 } }),
      step(4, { onFailure: { kind: 'goto', step: 8 } }),
    ],
  })
  t.match(routeAfterFailure(s, s.steps[0]!, 1, 'boom'), { kind: 'fail', error: 'step 1 failed: boom' })
  t.same(routeAfterFailure(s, s.steps[1]!, 1, 'x'), { kind: 'retry', attempt: 1 })
  t.same(routeAfterFailure(s, s.steps[1]!, 2, 'x'), { kind: 'retry', attempt: 2 })
  t.match(routeAfterFailure(s, s.steps[1]!, 3, 'x'), { kind: 'fail', error: /after 2 retries/ })
  t.same(routeAfterFailure(s, s.steps[2]!, 1, 'x'), { kind: 'step', step: 1 })
  t.match(routeAfterFailure(s, s.steps[3]!, 1, 'x'), { kind: 'fail', error: /step 8, which does not exist/ })
  t.equal(MAX_VISITS, 256)
})
