// Prints the test files that took longest in a tap run (its `ok N - file # time=…` lines), so
// each CI log names where its minutes went.
import { readFileSync } from 'node:fs'
const text = readFileSync(process.argv[2], 'utf8')
const n = Number(process.argv[3] ?? 10)
const files = [...text.matchAll(/^(?:not )?ok \d+ - (test\/\S+) # time=([\d.]+)ms/gm)]
  .map((m) => ({ file: m[1], s: Number(m[2]) / 1000 }))
  .sort((a, b) => b.s - a.s)
const total = files.reduce((sum, f) => sum + f.s, 0)
console.log(`ci: ${files.length} test files, ${Math.round(total)} s of test time; the ${n} longest:`)
for (const f of files.slice(0, n)) console.log(`ci:   ${f.s.toFixed(1).padStart(6)} s  ${f.file}`)
