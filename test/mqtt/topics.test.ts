import t from 'tap'
import {
  anyFilterMatches,
  filterCovers,
  filterError,
  minimalFilters,
  topicMatches,
} from '../../mqtt/topics.ts'

t.test('+ matches exactly one level', async (t) => {
  t.ok(topicMatches('boards/+/coin', 'boards/vend1/coin'))
  t.notOk(topicMatches('boards/+/coin', 'boards/vend1/x/coin'))
  t.notOk(topicMatches('boards/+/coin', 'boards/coin'))
  t.ok(topicMatches('boards/+/+', 'boards/vend1/coin'))
  t.notOk(topicMatches('boards/+/+', 'boards/vend1'))
  t.ok(topicMatches('+', 'a'))
  t.ok(topicMatches('a/+', 'a/'), 'an empty level is a level')
})

t.test('# matches the parent and everything below (MQTT-4.7.1-2)', async (t) => {
  t.ok(topicMatches('a/#', 'a'))
  t.ok(topicMatches('a/#', 'a/b/c'))
  t.notOk(topicMatches('a/#', 'ab'))
  t.ok(topicMatches('#', 'anything/at/all'))
})

t.test('wildcards at the first level do not match $ topics (MQTT-4.7.2-1)', async (t) => {
  t.notOk(topicMatches('#', '$SYS/broker'))
  t.notOk(topicMatches('+/broker', '$SYS/broker'))
  t.ok(topicMatches('$SYS/#', '$SYS/broker'))
})

t.test('exact topics', async (t) => {
  t.ok(topicMatches('a/b', 'a/b'))
  t.notOk(topicMatches('a/b', 'a/b/c'))
  t.notOk(topicMatches('a/b/c', 'a/b'))
})

t.test('anyFilterMatches answers as topicMatches over its filters', async (t) => {
  const filters = ['boards/+/coin', 'a/#', '$SYS/#', 'x/y']
  const matches = anyFilterMatches(filters)
  const topics = [
    'boards/v/coin',
    'boards/v/x/coin',
    'a',
    'a/b/c',
    'ab',
    '$SYS/broker',
    'x/y',
    'x/y/z',
    'x',
    '',
  ]
  for (const topic of topics)
    t.equal(
      matches(topic),
      filters.some((f) => topicMatches(f, topic)),
      topic,
    )
  t.notOk(anyFilterMatches([])('a'), 'no filter matches nothing')
  t.notOk(anyFilterMatches(['#'])('$SYS/broker'), 'the $ rule holds')
})

t.test(
  'matching agrees with the rules of MQTT 3.1.1 §4.7 level by level, for every small filter and topic',
  async (t) => {
    // The rules as written, on split levels: the oracle the in-place walk is held to.
    const byRule = (filter: string, topic: string): boolean => {
      const f = filter.split('/')
      const l = topic.split('/')
      if (topic.startsWith('$') && (f[0] === '+' || f[0] === '#')) return false
      for (let i = 0; i < f.length; i++) {
        if (f[i] === '#') return true
        if (i >= l.length) return false
        if (f[i] !== '+' && f[i] !== l[i]) return false
      }
      return f.length === l.length
    }
    const levels = ['a', 'ab', '', '$SYS']
    const topics: string[] = []
    const grow = (prefix: string[], depth: number, alphabet: string[], out: string[]) => {
      if (prefix.length > 0) out.push(prefix.join('/'))
      if (depth === 0) return
      for (const l of alphabet) grow([...prefix, l], depth - 1, alphabet, out)
    }
    grow([], 3, levels, topics)
    const filters: string[] = []
    grow([], 3, [...levels, '+'], filters)
    for (const f of [...filters]) filters.push(`${f}/#`)
    filters.push('#')
    let compared = 0
    for (const f of filters)
      for (const topic of topics) {
        if (topicMatches(f, topic) !== byRule(f, topic)) t.fail(`filter "${f}", topic "${topic}"`)
        compared++
      }
    const any = anyFilterMatches(['a/+', '$SYS/#'])
    for (const topic of topics)
      if (any(topic) !== (byRule('a/+', topic) || byRule('$SYS/#', topic))) t.fail(topic)
    t.ok(compared > 10_000, `${compared} pairs compared`)
  },
)

t.test('filter errors name the problem', async (t) => {
  t.equal(filterError('a/+/b'), null)
  t.equal(filterError('a/#'), null)
  t.match(filterError('a/#/b'), /"#" must be the whole last level/)
  t.match(filterError('a/b#'), /"#"/)
  t.match(filterError('a/x+/b'), /"\+" must be a whole level/)
  t.match(filterError(''), /empty/)
})

t.test('covering and the minimal subscription set', async (t) => {
  t.ok(filterCovers('boards/+/+', 'boards/vend1/coin'))
  t.ok(filterCovers('boards/+/+', 'boards/+/coin'))
  t.notOk(filterCovers('boards/+/coin', 'boards/+/+'))
  t.ok(filterCovers('a/#', 'a/+/c'))
  t.notOk(filterCovers('a/+', 'a/#'))
  t.same(minimalFilters(['boards/+/+', 'boards/vend1/coin', 'sensors/#', 'sensors/t1', 'x/y', 'x/y']), [
    'boards/+/+',
    'sensors/#',
    'x/y',
  ])
})
