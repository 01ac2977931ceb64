// Damaged small files (hub/files/README.md: Small files), as a power cut or a failing card leaves
// them: where the hub goes on, the file is renamed aside with one warning; where it cannot, the
// start stops with one line naming the file, what is wrong and the fix, and the file stays as it is.
// Then both through a real `svc hub`: a garbage cron state is set aside and the hub starts; a
// garbage device key stops the start and is not replaced.
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fail } from '../../errors/codes.ts'
import { loadOrCreateDeviceKey } from '../../hub/attest/device-key.ts'
import { readAccountsFile } from '../../hub/broker/accounts-file.ts'
import { readOwnerFile } from '../../hub/console/auth/owner-file.ts'
import { parseJson, readOrSetAside } from '../../hub/files/damaged-file.ts'
import type { Log } from '../../hub/log.ts'
import { createCronSource, cronKey } from '../../hub/triggers/cron.ts'
import { createFirer } from '../../hub/triggers/fire.ts'
import { buildPlan } from '../../hub/triggers/plan.ts'
import { matches } from '../../sops/conditions.ts'
import { recordingEngine, sop } from '../hub/fake-engine.ts'
import { startHubChild } from '../helpers/hub-process.ts'
import { tempDir } from '../helpers/tmp.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

function recordingLog(): Log & { warnings: { obj: Record<string, unknown>; msg: string }[] } {
  const warnings: { obj: Record<string, unknown>; msg: string }[] = []
  return {
    warnings,
    info: () => undefined,
    error: () => undefined,
    warn: (obj, msg) => void warnings.push({ obj: obj as Record<string, unknown>, msg: msg ?? '' }),
  }
}

const isObject = (text: string) => {
  const r = parseJson(text)
  if (!r.ok) return r
  return typeof r.value === 'object' && r.value !== null && !Array.isArray(r.value)
    ? { ok: true as const, value: r.value }
    : fail('IO_FAILED', 'not a JSON object')
}

t.test('go on: each kind of damage is renamed aside with one warning that says it all', async (t) => {
  const dir = await tempDir(t)
  const cases: [string, string, RegExp][] = [
    ['empty', '', /empty \(0 bytes\)/],
    ['cut short', '{"a":1,"b"', /not JSON/],
    ['garbage', '\u0000\u0000\u0000\u0000', /not JSON/],
    ['wrong shape', '[1,2]', /not a JSON object/],
  ]
  for (const [name, text, problem] of cases) {
    const file = join(dir, `${name.replace(' ', '-')}.json`)
    await writeFile(file, text)
    const log = recordingLog()
    const now = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678))
    const v = await readOrSetAside(file, isObject, { log, instead: 'the hub starts afresh', now: () => now })
    t.equal(v, null, `${name}: no value`)
    const aside = `${file}.damaged-20260102T030405.678Z`
    t.equal(await readFile(aside, 'utf8'), text, `${name}: the damaged copy is kept as it was`)
    t.notOk((await readdir(dir)).includes(file.split('/').pop() as string), `${name}: the file is gone`)
    t.equal(log.warnings.length, 1, `${name}: one warning`)
    const w = log.warnings[0]!
    t.match(w.obj, { file, problem, instead: 'the hub starts afresh', damagedCopy: aside })
    t.match(w.msg, file)
    t.match(w.msg, problem)
    t.match(w.msg, 'the hub starts afresh')
    t.match(w.msg, aside)
  }
  const log = recordingLog()
  t.equal(await readOrSetAside(join(dir, 'none.json'), isObject, { log, instead: 'x' }), null)
  await writeFile(join(dir, 'good.json'), '{"a":1}')
  t.same(await readOrSetAside(join(dir, 'good.json'), isObject, { log, instead: 'x' }), { a: 1 })
  t.equal(log.warnings.length, 0, 'a missing file and a good one: nothing said')
})

t.test('cron state cut to 0 bytes: set aside, no catch-up, a good state written again', async (t) => {
  const dir = await tempDir(t)
  const statePath = join(dir, 'cron-state.json')
  await writeFile(statePath, '')
  const log = recordingLog()
  const engine = recordingEngine()
  const T0 = Date.UTC(2026, 0, 1, 10, 30)
  const cron = await createCronSource(createFirer(engine, matches, log), log, {
    timezone: 'UTC',
    catchUp: true,
    statePath,
    now: () => T0,
  })
  await cron.setPlan(buildPlan([sop('hourly', [{ type: 'cron', expression: '0 * * * *' }])]))
  await cron.stop()
  t.equal(engine.calls.length, 0, 'nothing caught up: the schedule is seen as new')
  t.equal(log.warnings.length, 1)
  t.match(
    log.warnings[0]!.msg,
    /cron-state\.json is damaged \(empty \(0 bytes\)\); cron starts without catch-up/,
  )
  t.same(JSON.parse(await readFile(statePath, 'utf8')), { [cronKey('hourly', '0 * * * *')]: T0 })
  t.equal((await readdir(dir)).filter((n) => n.startsWith('cron-state.json.damaged-')).length, 1)
})

t.test('refuse: a damaged device key, accounts or owner file names the file and the fix', async (t) => {
  const dir = await tempDir(t)
  for (const [name, text, problem] of [
    ['empty', '', /empty \(0 bytes\)/],
    ['garbage', 'not a key\n', /expected 32 bytes of hex/],
    ['zero', `0x${'00'.repeat(32)}\n`, /not a valid secp256k1 key/],
  ] as const) {
    const file = join(dir, `${name}.key`)
    await writeFile(file, text, { mode: 0o600 })
    const err = await loadOrCreateDeviceKey(file).then(
      () => null,
      (e: Error) => e,
    )
    t.match(err?.message, new RegExp(`^device key ${file}: `), `${name}: the file`)
    t.match(err?.message, problem, `${name}: what is wrong`)
    t.match(err?.message, /svc hub restore/, `${name}: the fix`)
    t.notOk(err?.message.includes('\n'), `${name}: one line`)
    t.equal(await readFile(file, 'utf8'), text, `${name}: the key is never replaced`)
  }

  const accounts = join(dir, 'broker-accounts')
  await writeFile(accounts, '', { mode: 0o600 })
  t.match(await readAccountsFile(accounts), {
    ok: false,
    code: 'BAD_CONFIG',
    error: new RegExp(`^${accounts}: empty \\(0 bytes\\); .*svc hub user add`),
  })
  await writeFile(accounts, '# svc hub broker accounts\nops:admin::$scry', { mode: 0o600 })
  t.match(await readAccountsFile(accounts), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /broker-accounts:2: .*svc hub user add/,
  })

  const owner = join(dir, 'console-owner')
  await writeFile(owner, '# svc hub console owner password (scrypt)\n', { mode: 0o600 })
  t.match(await readOwnerFile(owner), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /console-owner: no password hash in it; .*svc hub console-password/,
  })
  await writeFile(owner, '', { mode: 0o600 })
  t.match(await readOwnerFile(owner), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /console-owner: empty \(0 bytes\)/,
  })
})

/** A home whose hub needs nothing but loopback ports; `[chain]` loads the device key. */
async function writeHome(home: string, extra = ''): Promise<void> {
  await mkdir(join(home, 'sops'), { recursive: true })
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${join(home, 'sops')}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n${extra}`,
  )
}

t.test('svc hub goes on past a garbage cron state, with the warning and the copy', async (t) => {
  const home = await tempDir(t)
  await writeHome(home)
  await mkdir(join(home, 'data'), { recursive: true })
  await writeFile(join(home, 'data', 'cron-state.json'), '\u0000\u0000garbage')
  const hub = await startHubChild(t, home)
  const warning = hub
    .out()
    .split('\n')
    .filter((l) => l.includes('cron-state.json is damaged'))
  t.equal(warning.length, 1, 'one warning')
  t.match(warning[0], /"level":40/)
  t.match(warning[0], /not JSON/)
  t.match(warning[0], /cron starts without catch-up memory/)
  const copies = (await readdir(join(home, 'data'))).filter((n) => n.startsWith('cron-state.json.damaged-'))
  t.equal(copies.length, 1, 'the damaged copy is kept')
  t.match(warning[0], copies[0] as string, 'and the warning says where')
  await hub.stop()
})

t.test('svc hub refuses to start on a garbage device key, in one line, and keeps the key', async (t) => {
  const home = await tempDir(t)
  await writeHome(home, '[chain]\n')
  await writeFile(join(home, 'device.key'), 'garbage', { mode: 0o600 })
  const proc = spawn(process.execPath, ['--import', 'tsx', join(root, 'cli/main.ts'), 'hub'], {
    cwd: root,
    env: { ...process.env, SVC_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  })
  let err = ''
  proc.stderr.on('data', (d: Buffer) => void (err += d.toString()))
  proc.stdout.resume()
  const code = await new Promise<number | null>((r) => proc.once('exit', (c) => r(c)))
  t.not(code, 0, 'the start stops')
  const lines = err.split('\n').filter((l) => l.startsWith('svc hub: could not start:'))
  t.equal(lines.length, 1, 'one line')
  t.match(
    lines[0],
    `svc hub: could not start: device key ${join(home, 'device.key')}: expected 32 bytes of hex; `,
  )
  t.match(lines[0], /svc hub restore/)
  t.equal(await readFile(join(home, 'device.key'), 'utf8'), 'garbage', 'the key is not replaced')
  t.same(
    (await readdir(home)).filter((n) => n.startsWith('device.key')),
    ['device.key'],
    'nor moved aside',
  )
})
