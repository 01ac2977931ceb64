// A reader that stops early (`svc … | head -1`) closes the CLI's stdout: the command ends
// quietly, as a Unix tool does, not with an unhandled EPIPE stack trace and exit 1.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { root } from '../start/child.ts'
import { tempDir } from '../helpers/tmp.ts'

function withClosedStdout(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [join(root, 'bin/svc.js'), ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  // Closed before the child writes a byte: its first write fails with EPIPE.
  child.stdout.destroy()
  let err = ''
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise<{ code: number | null; err: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, err })),
  )
}

t.test('svc with its stdout closed by the reader ends quietly', async (t) => {
  const env = { ...process.env, SVC_HOME: join(await tempDir(t), 'home') }
  for (const args of [
    ['--help'],
    ['sop', 'list', '--sops-dir', join(root, 'sops/examples'), '--json'],
    ['sop', '--help'],
  ]) {
    const r = await withClosedStdout(args, env)
    t.equal(r.code, 0, `svc ${args[0]} ${args[1] ?? ''}: exit 0`)
    t.notMatch(
      r.err,
      /EPIPE|Unhandled|internal error/,
      `svc ${args.join(' ')}: nothing on stderr about the pipe`,
    )
  }
})
