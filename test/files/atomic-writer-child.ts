// A child that replaces one file over and over with 1 MiB of one letter, then of the next. Half
// way through each write it says "half <n>" and waits for a line on stdin, so the test can
// SIGKILL it there, inside a write, every time. "atomic" writes as writeFileAtomic does (it is
// openAtomic, the handle's writes, commit); "plain" truncates the file and writes it in place.
import { open } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { openAtomic } from '../../files/atomic-file.ts'

const [file, how] = process.argv.slice(2) as [string, 'atomic' | 'plain']
const SIZE = 1024 * 1024
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
for (let i = 0; ; i++) {
  const d = Buffer.alloc(SIZE, 'abcdefgh'[i % 8] as string)
  const w = how === 'atomic' ? await openAtomic(file, { mode: 0o600 }) : null
  const fh = w ? w.handle : await open(file, 'w')
  await fh.write(d.subarray(0, SIZE / 2))
  process.stdout.write(`half ${i}\n`)
  await lines.next()
  await fh.write(d.subarray(SIZE / 2))
  if (w) await w.commit()
  else await fh.close()
}
