// Peripheral and mqtt triggers fed inside the embedded broker (hub/broker/trigger-feed.ts): each
// message the broker publishes on the trigger filters, its publisher's PUBACK held until the
// admissions are stored. No session, so nothing to subscribe, read or acknowledge here.
import type { TriggerFeed } from '../broker/trigger-feed.ts'
import type { Log } from '../log.ts'
import type { Firer } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { subscriptionFilters } from './dispatch.ts'
import { type MessageSource, type SourceOptions, type OnceMark, createIntake, onceKeys } from './intake.ts'

const BEHIND_EMBEDDED =
  'Publishers wait: the embedded broker withholds each PUBACK until the event is admitted, and ' +
  'reads no more from a publisher while the hub is at its cap; nothing is dropped'

export function createFeedSource(
  feed: TriggerFeed,
  firer: Firer,
  log: Log,
  initial: TriggerPlan,
  opts: SourceOptions = {},
): MessageSource {
  const intake = createIntake(firer, log, initial, {
    ...opts,
    atCap: 'the broker stopped reading their publishers',
    behindAdvice: BEHIND_EMBEDDED,
  })
  const setFilters = (plan: TriggerPlan): void => {
    const filters = subscriptionFilters(plan)
    feed.setFilters(filters)
    log.info({ filters }, 'trigger subscriptions (in the embedded broker)')
  }
  feed.attach(
    (m, done) => {
      // A client's QoS 1 message may come again under its packet id (its PUBACK lost in a crash).
      const marks: OnceMark[] = []
      const once = m.once !== null ? onceKeys(m.once, m.topic, m.payload, marks) : undefined
      // QoS 1 and 2: someone waits for the admission (a PUBACK, the hub's own publish), so one
      // the disk could not take waits for room rather than be let go (hub/disk/).
      intake.take(
        m.topic,
        m.payload,
        once,
        () => {
          done()
          intake.forgetLater(marks)
        },
        m.qos > 0,
      )
    },
    { cap: intake.cap, onCap: () => intake.paused() },
  )
  return {
    handle: (topic, payload, now) => intake.handle(topic, payload, now),
    backlog: () => intake.backlog(),
    async setPlan(next) {
      intake.setPlan(next)
      setFilters(next)
    },
    async stop() {
      feed.detach()
      intake.stop()
    },
  }
}
