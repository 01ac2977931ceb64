// Every transition of the run state machine: the allowed ones land where documented, every
// other (state, event) pair is refused with a reason that names both.
import t from 'tap'
import {
  RUN_STATES,
  type RunEvent,
  type RunState,
  holdsSlot,
  isFinished,
  isParked,
  transition,
} from '../../sops/run/states.ts'

const EVENTS: RunEvent[] = [
  'start',
  'gate',
  'checkpoint',
  'approve',
  'deny',
  'advance',
  'end',
  'fail',
  'cancel',
]

const ALLOWED: [RunState, RunEvent, RunState][] = [
  ['pending', 'start', 'running'],
  ['pending', 'gate', 'waiting_approval'],
  ['pending', 'checkpoint', 'paused_checkpoint'],
  ['pending', 'fail', 'failed'],
  ['pending', 'cancel', 'cancelled'],
  ['pending', 'end', 'completed'],
  ['running', 'advance', 'running'],
  ['running', 'gate', 'waiting_approval'],
  ['running', 'checkpoint', 'paused_checkpoint'],
  ['running', 'end', 'completed'],
  ['running', 'fail', 'failed'],
  ['running', 'cancel', 'cancelled'],
  ['waiting_approval', 'approve', 'running'],
  ['waiting_approval', 'deny', 'cancelled'],
  ['waiting_approval', 'cancel', 'cancelled'],
  ['paused_checkpoint', 'approve', 'running'],
  ['paused_checkpoint', 'deny', 'cancelled'],
  ['paused_checkpoint', 'cancel', 'cancelled'],
]

t.test('the allowed transitions land in the documented state', async (t) => {
  for (const [from, ev, to] of ALLOWED)
    t.same(transition(from, ev), { ok: true, state: to }, `${from} --${ev}--> ${to}`)
})

t.test('every other (state, event) pair is refused, naming both', async (t) => {
  let refused = 0
  for (const from of RUN_STATES) {
    for (const ev of EVENTS) {
      if (ALLOWED.some(([f, e]) => f === from && e === ev)) continue
      const r = transition(from, ev)
      t.equal(r.ok, false, `${from} --${ev}--> refused`)
      if (!r.ok) t.match(r, { code: 'CONFLICT', error: new RegExp(`${from}.*${ev}`) })
      refused++
    }
  }
  t.equal(refused, RUN_STATES.length * EVENTS.length - ALLOWED.length)
})

t.test('finished runs accept no event; slots and parking follow the state', async (t) => {
  for (const s of ['completed', 'failed', 'cancelled'] as const) {
    t.ok(isFinished(s))
    for (const ev of EVENTS) t.equal(transition(s, ev).ok, false)
  }
  t.same(RUN_STATES.filter(holdsSlot), ['pending', 'running'])
  t.same(RUN_STATES.filter(isParked), ['waiting_approval', 'paused_checkpoint'])
})
