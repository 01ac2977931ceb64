// hub/triggers/fifo.ts against a plain array: the same items in the same order, across the
// compaction it does once 1,024 taken slots are half of its array.
import t from 'tap'
import { Fifo } from '../../hub/triggers/fifo.ts'

t.test('a seeded mix of pushes and takes matches Array push/shift', async (t) => {
  const q = new Fifo<number>()
  const a: number[] = []
  let seed = 7
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % 100
  }
  let n = 0
  let mismatches = 0
  for (let i = 0; i < 50_000; i++) {
    // Grow to a few thousand, then drain, twice over.
    const pushing = i % 25_000 < 15_000 ? rand() < 70 : rand() < 25
    if (pushing) {
      q.push(n)
      a.push(n++)
    } else if (q.shift() !== a.shift()) mismatches++
    if (q.length !== a.length || q.peek() !== a[0]) mismatches++
  }
  t.equal(mismatches, 0, 'every take and every length agree')
  t.ok(n > 20_000, `enough went through (${n})`)
  while (a.length > 0) t.equal(q.shift(), a.shift())
  t.equal(q.shift(), undefined, 'empty gives undefined')
  t.equal(q.length, 0)
})
