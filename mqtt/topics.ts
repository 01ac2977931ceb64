// MQTT topics, in one place for every part that builds, checks or matches them: the bridge
// (board topics), the SOP validator (trigger filters), the trigger router (matching) and the
// mqtt_publish tool (publish topics). Pure, imports nothing. Matching follows MQTT 3.1.1
// section 4.7 (MQTT 5 is the same): `+` matches exactly one level, `#` (last level only)
// matches the parent and any number of levels below (`a/#` matches `a`, MQTT-4.7.1-2). Our own
// matcher rather than mqtt-match or aedes' qlobber: it is a dozen lines, it keeps the `$` rule
// (MQTT-4.7.2-1) the others leave to the broker, and filterCovers needs the same walk.

/** DESIGN "MQTT topics": a board's events, `boards/<board>/<signal>`, payload the event's text. */
export function boardTopic(board: string, signal: string): string {
  return `boards/${board}/${signal}`
}

/** `online`/`offline`, retained, published by the hub alone. */
export function availabilityTopic(board: string): string {
  return boardTopic(board, 'availability')
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: MQTT forbids U+0000 in topics (MQTT 5 §1.5.4)
const LEVEL = /^[^/+#\u0000]+$/

/** True when `name` can stand as one topic level (a board name, a signal): no `/`, `+`, `#` or NUL. */
export function isTopicLevel(name: string): boolean {
  return LEVEL.test(name)
}

/**
 * Why a filter is not a valid MQTT topic filter, or null when it is. The reason reads after the
 * filter: `topic "a/#/b" level "#": …`.
 */
export function filterError(filter: string): string | null {
  if (filter.length === 0) return 'is empty'
  if (filter.includes('\u0000')) return 'contains a NUL character'
  const levels = filter.split('/')
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i] as string
    // MQTT-4.7.1-2: `#` must be the last character and occupy a whole level.
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1))
      return `level "${level}": "#" must be the whole last level`
    // MQTT-4.7.1-3: `+` must occupy a whole level.
    if (level.includes('+') && level !== '+') return `level "${level}": "+" must be a whole level`
  }
  return null
}

/** Why a topic cannot be published to (MQTT-4.7.1-1: wildcards are for filters only), or null. */
export function topicError(topic: string): string | null {
  if (topic.length === 0) return 'is empty'
  if (topic.includes('+') || topic.includes('#'))
    return 'contains a wildcard ("+" or "#"); wildcards are only for subscriptions'
  if (topic.includes('\u0000')) return 'contains a NUL character'
  return null
}

export function topicMatches(filter: string, topic: string): boolean {
  return levelsMatch(filter.split('/'), topic.split('/'), topic.startsWith('$'))
}

/**
 * `topicMatches` against any of `filters`, each split once here and each topic once per call: for
 * a check on every message a broker carries (the embedded broker's trigger feed).
 */
export function anyFilterMatches(filters: readonly string[]): (topic: string) => boolean {
  const split = filters.map((f) => f.split('/'))
  if (split.length === 0) return () => false
  return (topic) => {
    const t = topic.split('/')
    const dollar = topic.startsWith('$')
    return split.some((f) => levelsMatch(f, t, dollar))
  }
}

function levelsMatch(f: readonly string[], t: readonly string[], dollar: boolean): boolean {
  // MQTT-4.7.2-1: a filter starting with a wildcard does not match topics starting with `$`.
  if (dollar && (f[0] === '+' || f[0] === '#')) return false
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
