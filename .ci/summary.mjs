// Prints tap's closing totals as one plain line: "N passed, N failed, N skipped".
import { readFileSync } from 'node:fs'
const text = readFileSync(process.argv[2], 'utf8')
const m = [...text.matchAll(/^# \{ total: (\d+)(.*)\}$/gm)].at(-1)
if (!m) {
  console.log('tests: 0 passed, 1 failed')
  process.exit(0)
}
const field = (name) => Number((m[2].match(new RegExp(`${name}: (\\d+)`)) ?? [0, 0])[1])
console.log(
  `tests: ${field('pass')} passed, ${field('fail')} failed, ${field('skip') + field('todo')} skipped`,
)
