// MQTT topic-filter matching, as the MQTT 3.1.1 spec says (section 4.7): `+` matches exactly
// one level, `#` (last level only) matches the parent and any number of levels below
// (`a/#` matches `a`, MQTT-4.7.1-2). Pure: the router uses it to dispatch one received message
// to every trigger whose filter matches, and to avoid subscribing twice to covered filters.

/** Why a filter is not a valid MQTT topic filter, or null when it is. */
export function filterError(filter: string): string | null {
  if (filter.length === 0) return 'topic filter is empty'
  if (filter.includes('\u0000')) return 'topic filter contains a NUL character'
  const levels = filter.split('/')
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i] as string
    // MQTT-4.7.1-2: `#` must be the last character and occupy a whole level.
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1))
      return `"#" must be the whole last level (in "${filter}")`
    // MQTT-4.7.1-3: `+` must occupy a whole level.
    if (level.includes('+') && level !== '+') return `"+" must be a whole level (in "${filter}")`
  }
  return null
}

/** Why a topic cannot be published to (wildcards are for filters only), or null. */
export function topicError(topic: string): string | null {
  if (topic.length === 0) return 'topic is empty'
  if (topic.includes('+') || topic.includes('#'))
    return `topic "${topic}" contains a wildcard; wildcards are only allowed in subscriptions`
  if (topic.includes('\u0000')) return 'topic contains a NUL character'
  return null
}

export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/')
  const t = topic.split('/')
  // MQTT-4.7.2-1: a filter starting with a wildcard does not match topics starting with `$`.
  if (topic.startsWith('$') && (f[0] === '+' || f[0] === '#')) return false
  for (let i = 0; i < f.length; i++) {
    const level = f[i] as string
    if (level === '#') return true
    if (i >= t.length) return false
    if (level !== '+' && level !== t[i]) return false
  }
  return f.length === t.length
}

/** True when every topic matched by `inner` is also matched by `outer`. */
export function filterCovers(outer: string, inner: string): boolean {
  const o = outer.split('/')
  const n = inner.split('/')
  for (let i = 0; i < o.length; i++) {
    const level = o[i] as string
    if (level === '#') return true
    if (i >= n.length) return false
    const sub = n[i] as string
    if (sub === '#') return false
    if (level === '+') continue
    if (sub === '+' || sub !== level) return false
  }
  return o.length === n.length
}

/** The smallest set of filters to subscribe to: drops any filter covered by another one. */
export function minimalFilters(filters: Iterable<string>): string[] {
  const unique = [...new Set(filters)].sort()
  return unique.filter((f) => !unique.some((g) => g !== f && filterCovers(g, f)))
}
