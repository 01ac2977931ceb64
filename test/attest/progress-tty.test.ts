// `svc attest sync` as a person runs it: on a terminal (a real pseudo-terminal from util-linux
// `script`) a bar redrawn in place with lines/s and ETA, ending on the full bar and the summary;
// into a pipe, plain lines and no carriage returns.
import { spawn, spawnSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { writeChainFile } from '../../hub/files/chain-file.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { attestStorePath, openAttestStore } from '../../hub/attest/store.ts'
import { svcPaths } from '../../hub/paths.ts'
import { attestLines } from '../helpers/attest-lines.ts'
import { startDevAttestor } from '../helpers/dev-attestor.ts'
import { tempDir } from '../helpers/tmp.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const LINES = 120
const BATCH = 15
/** ANSI erase to end of line (CSI K). */
const CLEAR = '\x1b[K'

const noScript = spawnSync('script', ['--version']).error
if (noScript) {
  t.comment(`skipped: util-linux \`script\` is missing (${noScript.message}); apt-get install util-linux`)
  t.pass('skipped: no script(1) for a pseudo-terminal')
} else {
  const { chain, attestor } = await startDevAttestor(t)

  /** A home with LINES attested lines waiting, the enrolled device's key and the chain file. */
  async function home(t: Test, name: string): Promise<{ home: string; chainFile: string }> {
    const home = await tempDir(t)
    const env = { ...process.env, SVC_HOME: home }
    const paths = svcPaths(env)
    await writeFile(paths.deviceKey, `${chain.accounts.device.privateKey}\n`, { mode: 0o600 })
    const chainFile = join(home, 'chain.json')
    await writeChainFile(chainFile, { ...chain.info, attestorUrl: attestor.url })
    const store = await openAttestStore(attestStorePath(paths.data))
    await attestLines(store, signerFromKey(chain.accounts.device.privateKey), LINES, name)
    await store.close()
    return { home, chainFile }
  }

  function run(
    cmd: string,
    args: string[],
    env: NodeJS.ProcessEnv,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const p = spawn(cmd, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    return new Promise((resolve) => p.once('close', (code) => resolve({ code, stdout, stderr })))
  }

  const cli = ['--import', 'tsx', join(root, 'cli/main.ts'), 'attest', 'sync', '--batch', String(BATCH)]
  const summary = `${LINES} requested, ${LINES} attested, 0 failed, 0 remaining`

  t.test('on a terminal: a bar redrawn in place, the full bar, then the summary', async (t) => {
    const h = await home(t, 'tty')
    const command = [process.execPath, ...cli, '--chain', h.chainFile].map((a) => `'${a}'`).join(' ')
    // script(1) runs the command on a new pseudo-terminal (stdin, stdout and stderr all a TTY)
    // and copies what the terminal shows to its own stdout, our pipe. COLUMNS: an 80-column one.
    const r = await run('script', ['-qfec', command, '/dev/null'], {
      ...process.env,
      SVC_HOME: h.home,
      COLUMNS: '80',
    })
    t.equal(r.code, 0, 'exit 0')
    if (r.code !== 0) t.comment(r.stdout)
    const screen = r.stdout
    // Each redraw starts with a carriage return and ends by clearing the rest of the line.
    const draws = screen
      .split('\r')
      .map((s) => s.replaceAll(CLEAR, ''))
      .filter((s) => s.startsWith('['))
    t.ok(draws.length >= 3, `the bar was redrawn (${draws.length} draws)`)
    t.equal(
      screen.split(CLEAR).length - 1,
      draws.length,
      'each redraw clears the rest of the line (a shorter figure leaves no tail)',
    )
    const bar = /^\[([#.]{10,})\] (\d+)\/(\d+) lines {2}([\d.]+) lines\/s {2}ETA (\S+)/
    t.ok(
      draws.every((d) => bar.test(d)),
      'each draw is a bar with lines/s and ETA',
    )
    const done = draws.map((d) => Number(bar.exec(d)?.[2]))
    t.same(
      done,
      done.toSorted((a, b) => a - b),
      'its count only grows',
    )
    const last = draws[draws.length - 1]!
    const [, cells, n, total] = bar.exec(last)!
    t.equal(`${n}/${total}`, `${LINES}/${LINES}`, 'the last draw is the whole queue')
    t.notOk(cells!.includes('.'), 'and the bar full')
    t.ok(
      draws.every((d) => d.split('\n')[0]!.length <= 80),
      'every draw fits an 80-column terminal (no wrapped redraws)',
    )
    t.match(
      screen,
      new RegExp(`\\] ${LINES}/${LINES} lines[^\\r]*\\r?\\n${summary}`),
      'the summary on its own line',
    )
    t.notMatch(screen, /^sync: \d+\/\d+ lines,/m, 'no plain progress lines on a terminal')
  })

  t.test('into a pipe: plain lines, no carriage return', async (t) => {
    const h = await home(t, 'pipe')
    const r = await run(process.execPath, [...cli, '--chain', h.chainFile], {
      ...process.env,
      SVC_HOME: h.home,
    })
    t.equal(r.code, 0, 'exit 0')
    if (r.code !== 0) t.comment(r.stderr)
    t.equal(r.stdout.trim(), summary)
    t.notOk(r.stderr.includes('\r'), 'no carriage returns')
    t.notOk(r.stderr.includes('\x1b'), 'no escape sequences')
    const lines = r.stderr.trim().split('\n')
    t.ok(
      lines.every((l) => /^sync: \d+\/\d+ lines, [\d.]+ lines\/s, ETA \S+$/.test(l)),
      `plain progress lines only (${lines.length})`,
    )
    t.equal(
      lines[lines.length - 1]!.split(',')[0],
      `sync: ${LINES}/${LINES} lines`,
      'the last line says done',
    )
  })
}
