// The one writer of small files (hub/files/README.md: Small files): the file has its mode and
// nothing is left beside it; a key is never written over; and a writer SIGKILLed half way through
// replacing a 1 MiB file leaves the previous file whole, where a plain writeFile leaves
// a torn one. A power cut also drops what was not fsynced: that part is the fsyncs, not tested here.
import t from 'tap'
import { spawn } from 'node:child_process'
import { chmod, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { tempDir } from '../helpers/tmp.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

t.test('a new file and a replaced one: the content, the mode asked for, no temp file left', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'sub', 'state.json')
  await writeFileAtomic(file, '{"a":1}', { mode: 0o600, dirMode: 0o700 })
  t.equal(await readFile(file, 'utf8'), '{"a":1}')
  t.equal((await stat(file)).mode & 0o777, 0o600)
  t.equal((await stat(join(dir, 'sub'))).mode & 0o777, 0o700, 'the folder it made')

  await chmod(file, 0o644)
  await writeFileAtomic(file, Buffer.from('{"a":2}'), { mode: 0o600 })
  t.equal(await readFile(file, 'utf8'), '{"a":2}')
  t.equal((await stat(file)).mode & 0o777, 0o600, 'the old file’s looser mode is not carried over')
  t.same(await readdir(join(dir, 'sub')), ['state.json'], 'nothing beside it')
})

t.test('exclusive: a file that is there is never written over', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'device.key')
  await writeFileAtomic(file, 'first\n', { mode: 0o600, exclusive: true })
  await t.rejects(writeFileAtomic(file, 'second\n', { mode: 0o600, exclusive: true }), { code: 'EEXIST' })
  t.equal(await readFile(file, 'utf8'), 'first\n')
  t.same(await readdir(dir), ['device.key'], 'the refused temp file is gone')
})

const SIZE = 1024 * 1024

/** Starts the child writer, SIGKILLs it half way through its write number `nth`, returns the file. */
async function killMidWrite(dir: string, how: 'atomic' | 'plain', nth: number): Promise<Buffer> {
  const file = join(dir, `${how}.bin`)
  await writeFile(file, Buffer.alloc(SIZE, 'z'))
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'test/files/atomic-writer-child.ts'), file, how],
    { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  let out = ''
  await new Promise<void>((resolve) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      for (let m: RegExpExecArray | null; (m = /half (\d+)\n/.exec(out)); ) {
        out = out.slice(m.index + m[0].length)
        if (Number(m[1]) === nth) return resolve()
        child.stdin!.write('go on\n')
      }
    })
  })
  process.kill(child.pid as number, 'SIGKILL')
  await exited
  return readFile(file)
}

const whole = (b: Buffer): boolean => b.length === SIZE && b.every((x) => x === b[0])

t.test('SIGKILLed half way through replacing a file: the previous content, whole, every time', async (t) => {
  const dir = await tempDir(t)
  for (let nth = 0; nth < 4; nth++) {
    const b = await killMidWrite(dir, 'atomic', nth)
    const was = nth === 0 ? 'z' : 'abcdefgh'[nth - 1]
    t.ok(whole(b) && String.fromCharCode(b[0] as number) === was, `kill in write ${nth}: all '${was}'`)
    // The killed writer's temp file stays: never read, named so that it can be told and removed.
    const left = (await readdir(dir)).filter((n) => n !== 'atomic.bin')
    t.equal(left.length, 1, 'one temp file beside it')
    t.match(left[0], /^atomic\.bin\.\d+\.[0-9a-f]{8}\.tmp$/)
    await rm(join(dir, left[0] as string))
  }
})

t.test('the same kill on a plain writeFile tears the file (what the atomic writer is for)', async (t) => {
  const dir = await tempDir(t)
  let torn = 0
  for (let nth = 0; nth < 2; nth++) if (!whole(await killMidWrite(dir, 'plain', nth))) torn++
  t.equal(torn, 2, 'torn both times')
})
