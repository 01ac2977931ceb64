// Which topics the embedded broker's clients are subscribed to, so the hub can tell whether a
// QoS 0 message of its own would reach anybody. A QoS 0 message that is not retained goes to the
// subscribers connected at that moment and is then gone (MQTT 3.1.1 §4.3.1, never queued for an
// offline session); one nobody subscribes to is dropped on arrival, and building it is wasted.
//
// Every client subscription passes through `aedes.subscribe`, and every removal (UNSUBSCRIBE, a
// changed QoS, a closed connection) through `aedes.unsubscribe` (aedes lib/handlers/subscribe.js,
// unsubscribe.js, client.js close), so wrapping the two on the instance sees them all. What was
// subscribed before the wrap (the hub's trigger feed) is not counted.
import type { Aedes } from 'aedes'
import { anyFilterMatches } from '../../mqtt/topics.ts'

/** Subscriptions made from now on; the answer is true when one of them matches `topic`. */
export function watchSubscribers(aedes: Aedes): (topic: string) => boolean {
  const byFilter = new Map<string, Set<unknown>>()
  let matches: ((topic: string) => boolean) | null = null
  const subscribe = aedes.subscribe.bind(aedes)
  const unsubscribe = aedes.unsubscribe.bind(aedes)

  aedes.subscribe = (topic, func, done) => {
    let funcs = byFilter.get(topic)
    if (!funcs) byFilter.set(topic, (funcs = new Set()))
    funcs.add(func)
    matches = null
    return subscribe(topic, func, done)
  }
  aedes.unsubscribe = (topic, func, done) => {
    const funcs = byFilter.get(topic)
    if (funcs?.delete(func)) {
      if (funcs.size === 0) byFilter.delete(topic)
      matches = null
    }
    return unsubscribe(topic, func, done)
  }
  // Subscriptions change seldom and messages often: the matcher is rebuilt on the first question
  // after a change.
  return (topic) => {
    if (!matches) matches = anyFilterMatches([...byFilter.keys()])
    return matches(topic)
  }
}
