// AMQP 0-9-1 topic-exchange matching, as the broker routes (sops/FORMAT.md, "Triggers": amqp `routing_key`): a key
// is words separated by `.`; in a binding key `*` is exactly one word and `#` zero or more, so
// `orders.#` matches `orders` and `#` matches everything. Pure. The broker already filtered what
// reaches the hub's queue; this tells which of the SOPs bound to it a message is for.

/** The longest routing key AMQP 0-9-1 carries (a shortstr). */
export const MAX_ROUTING_KEY_BYTES = 255

export function routingKeyError(pattern: string): string | null {
  if (Buffer.byteLength(pattern, 'utf8') > MAX_ROUTING_KEY_BYTES)
    return `routing_key is longer than ${MAX_ROUTING_KEY_BYTES} bytes`
  return null
}

export function routingKeyMatches(pattern: string, key: string): boolean {
  const p = pattern.split('.')
  const k = key.split('.')
  // can[j]: pattern words so far can match the first j key words (one row of the usual table).
  let can: boolean[] = Array.from({ length: k.length + 1 }, (_, j) => j === 0)
  for (const word of p) {
    const next: boolean[] = new Array(k.length + 1).fill(false)
    if (word === '#') {
      let any = false
      for (let j = 0; j <= k.length; j++) {
        any ||= can[j]!
        next[j] = any
      }
    } else {
      for (let j = 1; j <= k.length; j++) next[j] = can[j - 1]! && (word === '*' || word === k[j - 1])
    }
    can = next
  }
  return can[k.length]!
}
