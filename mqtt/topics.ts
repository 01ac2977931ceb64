// MQTT topics, in one place for every part that builds, checks or matches them: the bridge
// (board topics), the SOP validator (trigger filters), the trigger router (matching) and the
// mqtt_publish tool (publish topics). Pure, imports nothing. Matching follows MQTT 3.1.1
// section 4.7 (MQTT 5 is the same): `+` matches exactly one level, `#` (last level only)
// matches the parent and any number of levels below (`a/#` matches `a`, MQTT-4.7.1-2). Our own
// matcher rather than mqtt-match or aedes' qlobber: it is short, it keeps the `$` rule
// (MQTT-4.7.2-1) the others leave to the broker, and it makes nothing per message.

/** hub/DESIGN.md, "MQTT topics": a board's events, `boards/<board>/<signal>`, payload the event's text. */
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

/**
 * Walks filter and topic level by level in place: no array per call, since the broker's trigger
 * feed and the trigger router ask for every message.
 */
export function topicMatches(filter: string, topic: string): boolean {
  // MQTT-4.7.2-1: a filter starting with a wildcard does not match topics starting with `$`.
  if (topic.charCodeAt(0) === DOLLAR) {
    const c = filter.charCodeAt(0)
    if ((c === PLUS || c === HASH) && (filter.length === 1 || filter.charCodeAt(1) === SLASH)) return false
  }
  let f = 0
  let t = 0
  for (;;) {
    let fEnd = filter.indexOf('/', f)
    if (fEnd < 0) fEnd = filter.length
    const fLen = fEnd - f
    if (fLen === 1 && filter.charCodeAt(f) === HASH) return true
    // The topic has no level left here.
    if (t > topic.length) return false
    let tEnd = topic.indexOf('/', t)
    if (tEnd < 0) tEnd = topic.length
    if (!(fLen === 1 && filter.charCodeAt(f) === PLUS) && !sameLevel(filter, f, fLen, topic, t, tEnd - t))
      return false
    if (fEnd === filter.length) return tEnd === topic.length
    f = fEnd + 1
    t = tEnd + 1
  }
}

const DOLLAR = 36
const PLUS = 43
const HASH = 35
const SLASH = 47

function sameLevel(a: string, aAt: number, aLen: number, b: string, bAt: number, bLen: number): boolean {
  if (aLen !== bLen) return false
  for (let i = 0; i < aLen; i++) if (a.charCodeAt(aAt + i) !== b.charCodeAt(bAt + i)) return false
  return true
}

/** `topicMatches` against any of `filters`: for a check on every message a broker carries. */
export function anyFilterMatches(filters: readonly string[]): (topic: string) => boolean {
  const all = [...filters]
  if (all.length === 0) return () => false
  return (topic) => {
    for (const f of all) if (topicMatches(f, topic)) return true
    return false
  }
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
