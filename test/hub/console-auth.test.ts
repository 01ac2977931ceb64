// The console's sign-in on a real hub: one-time links, the owner password (set with the real
// `svc hub console-password`), wrong passwords rate-limited, forged posts refused, the headers,
// and a bind beyond loopback refused without a password or HTTPS.
import t from 'tap'
import { chmod, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { consolePasswordCommand } from '../../cli/hub-console-password.ts'
import { UserError } from '../../cli/io.ts'
import { ownerPath, readOwnerFile } from '../../hub/console/auth/owner-file.ts'
import { createFailureLimiter } from '../../hub/console/auth/failures.ts'
import { createLoginLinks, createSessionStore } from '../../hub/console/auth/tokens.ts'
import { safeNext } from '../../hub/console/auth/routes.ts'
import { consoleBindError } from '../../hub/console/index.ts'
import { verifyPassword } from '../../hub/broker/password.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { ConsoleClient, startConsoleHub } from './console-helpers.ts'

const PASSWORD = 'correct horse battery staple'

async function setPassword(
  home: string,
  password: string,
): Promise<{ code: number; out: string; err: string }> {
  let out = ''
  let err = ''
  const io = {
    out: (s: string) => void (out += s),
    err: (s: string) => void (err += s),
    env: { SVC_HOME: home },
    cwd: home,
  }
  try {
    const code = await consolePasswordCommand({ readStdin: async () => `${password}\n`, prompt: null })(
      ['--password-stdin'],
      io,
    )
    return { code, out, err }
  } catch (e) {
    if (!(e instanceof UserError)) throw e
    return { code: e.exitCode, out, err: err + e.message }
  }
}

t.test(
  'signed out: pages redirect to /login, the event stream is refused, every answer has the CSP',
  async (t) => {
    const { url } = await startConsoleHub(t)
    const c = new ConsoleClient(url)
    const res = await c.get('/')
    t.equal(res.status, 303)
    t.equal(res.headers.get('location'), '/login?next=%2F')
    const csp = res.headers.get('content-security-policy') ?? ''
    t.match(csp, /default-src 'none'/)
    t.match(csp, /script-src 'self'/)
    t.match(csp, /frame-ancestors 'none'/)
    t.notMatch(csp, /unsafe-inline/)
    const ev = await c.get('/events', { accept: 'text/event-stream' })
    t.equal(ev.status, 401)
    t.match(await ev.text(), /not signed in/)
    const login = await c.get('/login')
    t.equal(login.status, 200)
    const page = await login.text()
    t.match(page, /No owner password is set/)
    t.notMatch(page, /<script>/, 'no inline script')
    const missing = await c.get('/no/such/page')
    t.equal(missing.status, 404)
    t.match(await missing.text(), /Not found/)
  },
)

t.test(
  'a one-time link signs in once; the cookie is HttpOnly, SameSite=Strict, not Secure on loopback',
  async (t) => {
    const { hub, url } = await startConsoleHub(t)
    const link = hub.console!.loginLink()
    t.match(link, new RegExp(`^${url}/login#token=[A-Za-z0-9_-]{43}$`), 'the token rides in the fragment')
    const c = new ConsoleClient(url)
    const res = await c.signInWithLink(link)
    t.equal(res.status, 200)
    const cookie = res.headers.get('set-cookie') ?? ''
    t.match(cookie, /^svc_console=[A-Za-z0-9_-]{43};/)
    t.match(cookie, /HttpOnly/)
    t.match(cookie, /SameSite=Strict/)
    t.notMatch(cookie, /Secure/)
    const page = await c.get('/')
    t.equal(page.status, 200)
    t.match(await page.text(), /<h1>Overview<\/h1>/)

    const again = new ConsoleClient(url)
    const second = await again.signInWithLink(link)
    t.equal(second.status, 401, 'the same link does not sign in twice')
    t.match(((await second.json()) as { error: string }).error, /already used or has expired/)
    t.equal(again.cookie, '', 'no session')

    const foreign = await new ConsoleClient(url).post(
      '/login/link',
      { token: decodeURIComponent(hub.console!.loginLink().split('#token=')[1]!) },
      { json: true, origin: 'http://evil.example' },
    )
    t.equal(foreign.status, 403, 'a link posted from another origin is refused')

    const bad = await new ConsoleClient(url).post('/login/link', { nope: 'x' }, { json: true })
    t.equal(bad.status, 400)
    t.match(((await bad.json()) as { error: string }).error, /needs \{"token"/)

    // Sign-out ends the session on the server, not just in the browser.
    const csrf = await c.csrf()
    const kept = c.cookie
    t.equal((await c.post('/logout', { _csrf: csrf })).status, 303)
    c.cookie = kept
    t.equal((await c.get('/')).status, 303, 'the old cookie no longer works')
  },
)

t.test('links expire, and are single-use, in the token store itself', async (t) => {
  const links = createLoginLinks(1000)
  const a = links.mint(0)
  t.equal(links.consume(a, 999), true)
  t.equal(links.consume(a, 999), false)
  const b = links.mint(0)
  t.equal(links.consume(b, 1000), false, 'expired at its ttl')
  t.equal(links.consume('made-up', 0), false)
  const sessions = createSessionStore({ idleMs: 100, maxAgeMs: 1000, max: 2 })
  const s1 = sessions.create(0)
  t.ok(sessions.get(s1.id, 50))
  t.equal(sessions.get(s1.id, 151), null, 'idle too long')
  const s2 = sessions.create(0)
  sessions.create(0)
  sessions.create(0)
  t.equal(sessions.get(s2.id, 1), null, 'the oldest goes past the bound')
  t.equal(safeNext('//evil.example/x'), '/')
  t.equal(safeNext('/\\evil.example'), '/')
  t.equal(safeNext('https://evil.example'), '/')
  t.equal(safeNext('/runs?sop=a'), '/runs?sop=a')
})

t.test(
  'owner password: set by the CLI, signs in; wrong passwords are rate-limited and change nothing',
  async (t) => {
    const home = await tempDir(t)
    const set = await setPassword(home, PASSWORD)
    t.equal(set.code, 0, set.err)
    t.match(set.out, /console password set in .*console-owner \(mode 0600\)/)
    const file = ownerPath(join(home, 'data'))
    const read = await readOwnerFile(file)
    t.ok(
      read.ok && read.hash && (await verifyPassword(Buffer.from(PASSWORD), read.hash)),
      'stored as a scrypt hash',
    )
    t.notMatch(await readFile(file, 'utf8'), new RegExp(PASSWORD), 'never the password itself')

    const { url } = await startConsoleHub(t, { home })
    const login = await (await new ConsoleClient(url).get('/login')).text()
    t.match(login, /type="password"/)

    const good = new ConsoleClient(url)
    const ok = await good.post('/login', { password: PASSWORD, next: '/runs' })
    t.equal(ok.status, 303)
    t.equal(ok.headers.get('location'), '/runs')
    t.match(ok.headers.get('set-cookie') ?? '', /svc_console=/)

    const forged = await new ConsoleClient(url).post(
      '/login',
      { password: PASSWORD },
      { origin: 'http://evil.example' },
    )
    t.equal(forged.status, 403, 'a sign-in form posted from another origin is refused')
    t.equal(forged.headers.get('set-cookie'), null)

    const guess = new ConsoleClient(url)
    for (let i = 0; i < 5; i++) {
      const r = await guess.post('/login', { password: `wrong guess ${i}` })
      t.equal(r.status, 401, `wrong password ${i + 1}`)
      t.match(await r.text(), /wrong password/)
    }
    const limited = await guess.post('/login', { password: PASSWORD })
    t.equal(limited.status, 429, 'the 6th try is refused, even with the right password')
    const retry = Number(limited.headers.get('retry-after'))
    t.ok(retry > 0 && retry <= 900, `Retry-After ${retry} s`)
    t.match(await limited.text(), /too many failed sign-ins/)
    t.equal(guess.cookie, '', 'no session came of it')
    t.equal((await guess.post('/login/link', { token: 'x' }, { json: true })).status, 429, 'links too')

    // The limiter itself: per address, and a global bound across addresses.
    const lim = createFailureLimiter({ max: 2, globalMax: 3, windowMs: 1000 })
    lim.fail('a', 0)
    lim.fail('a', 0)
    t.equal(lim.blocked('a', 10), 1)
    t.equal(lim.blocked('b', 10), null)
    lim.fail('b', 0)
    t.equal(lim.blocked('c', 10), 1, 'the global bound')
    t.equal(lim.blocked('a', 1000), null, 'the window slides')
  },
)

t.test('svc hub console-password: bad input changes nothing; --clear removes it', async (t) => {
  const home = await tempDir(t)
  const short = await setPassword(home, 'short')
  t.equal(short.code, 1)
  t.match(short.err, /shorter than 12 characters/)
  const r0 = await readOwnerFile(ownerPath(join(home, 'data')))
  t.same(r0, { ok: true, hash: null }, 'nothing written')
  const io = { out: () => {}, err: () => {}, env: { SVC_HOME: home }, cwd: home }
  const cmd = consolePasswordCommand({ readStdin: async () => '', prompt: null })
  await t.rejects(cmd(['hunter2hunter2'], io), /never an argument/)
  await t.rejects(cmd([], io), /no terminal/)
  t.equal((await setPassword(home, PASSWORD)).code, 0)
  const file = ownerPath(join(home, 'data'))
  await chmod(file, 0o644)
  const loose = await setPassword(home, PASSWORD)
  t.equal(loose.code, 1, 'refused')
  t.match(loose.err, /mode 0644 .*chmod 600/)
  await t.rejects(startConsoleHub(t, { home }), /mode 0644/, 'the hub does not start on a readable hash')
  await chmod(file, 0o600)
  let out = ''
  t.equal(await cmd(['--clear'], { ...io, out: (s: string) => void (out += s) }), 0)
  t.match(out, /console password removed/)
  t.same(await readOwnerFile(file), { ok: true, hash: null })
})

t.test('beyond loopback: no password → the hub refuses to start; no HTTPS → refuses too', async (t) => {
  t.equal(consoleBindError({ enabled: true, host: '127.0.0.1', port: 0, tls: null }, false), null)
  t.equal(consoleBindError({ enabled: true, host: '::1', port: 0, tls: null }, false), null)
  const home = await tempDir(t)
  const port = await freePort()
  await t.rejects(
    startConsoleHub(t, { home, toml: `[console]\nhost = "0.0.0.0"\nport = ${port}\n` }),
    /console\.host "0\.0\.0\.0" is beyond loopback and no console owner password is set: run `svc hub console-password`/,
  )
  t.equal((await setPassword(home, PASSWORD)).code, 0)
  await t.rejects(
    startConsoleHub(t, { home, toml: `[console]\nhost = "0.0.0.0"\nport = ${port}\n` }),
    /beyond loopback without HTTPS.*console\.tls_cert and console\.tls_key/,
  )
  // Nothing was left listening by the refused starts: the port is free.
  const again = await startConsoleHub(t, { home, toml: `[console]\nport = ${port}\n` })
  t.equal(new URL(again.url).port, String(port))
})

const hasOpenssl = spawnSync('openssl', ['version']).error === undefined
t.test(
  'beyond loopback with a password and HTTPS: starts, and the session cookie is Secure',
  { skip: hasOpenssl ? false : 'openssl not on PATH' },
  async (t) => {
    const home = await tempDir(t)
    const cert = join(home, 'cert.pem')
    const key = join(home, 'key.pem')
    const made = spawnSync('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=svc-test'],
    ])
    t.equal(made.status, 0, String(made.stderr))
    t.equal((await setPassword(home, PASSWORD)).code, 0)
    const { url } = await startConsoleHub(t, {
      home,
      toml: `[console]\nhost = "0.0.0.0"\nport = 0\ntls_cert = "${cert}"\ntls_key = "${key}"\n`,
    })
    t.match(url, /^https:\/\//)
    const port = new URL(url).port
    // The test trusts its own certificate through node's https module.
    const https = await import('node:https')
    const ca = await readFile(cert)
    const res = await new Promise<{ status: number; cookie: string }>((resolve, reject) => {
      const body = new URLSearchParams({ password: PASSWORD }).toString()
      const req = https.request(
        {
          host: '127.0.0.1',
          port,
          path: '/login',
          method: 'POST',
          ca,
          checkServerIdentity: () => undefined,
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            origin: `https://127.0.0.1:${port}`,
            host: `127.0.0.1:${port}`,
          },
        },
        (r) => {
          r.resume()
          resolve({ status: r.statusCode ?? 0, cookie: String(r.headers['set-cookie'] ?? '') })
        },
      )
      req.on('error', reject)
      req.end(body)
    })
    t.equal(res.status, 303)
    t.match(res.cookie, /Secure/)
    t.match(res.cookie, /HttpOnly/)
  },
)

t.test('hub.toml [console]: a half TLS pair or a bad port is refused with the field named', async (t) => {
  const home = await tempDir(t)
  await writeFile(join(home, 'x'), '')
  await t.rejects(
    startConsoleHub(t, { home, toml: '[console]\nport = 0\ntls_cert = "a.pem"\n' }),
    /console\.tls_cert and console\.tls_key: give both/,
  )
  await t.rejects(startConsoleHub(t, { home, toml: '[console]\nport = 70000\n' }), /console\.port: /)
})
