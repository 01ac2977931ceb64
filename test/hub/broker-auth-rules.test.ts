// The pure parts of broker auth: who may publish and subscribe where (acl.ts), which binds are
// loopback, the accounts file format, the password hashes, and hub.toml's TLS keys.
import t from 'tap'
import { mayPublish, maySubscribe, type Principal } from '../../hub/broker/acl.ts'
import { formatAccounts, parseAccounts } from '../../hub/broker/accounts.ts'
import { isLoopbackHost } from '../../net/loopback.ts'
import { hashPassword, parseScryptHash, passwordError, verifyPassword } from '../../hub/broker/password.ts'
import { parseConfig } from '../../hub/daemon/config.ts'

const hub: Principal = { kind: 'hub' }
const anon: Principal = { kind: 'anonymous' }
const admin: Principal = { kind: 'account', name: 'ops', role: 'admin', board: null }
const reader: Principal = { kind: 'account', name: 'dash', role: 'reader', board: null }
const esp: Principal = { kind: 'account', name: 'esp-acct', role: 'board', board: 'esp1' }
const owned = new Set(['vend1'])

t.test('mayPublish', async (t) => {
  const cases: [Principal, string, boolean][] = [
    [hub, 'boards/vend1/availability', true],
    [hub, 'boards/vend1/coin', true],
    [hub, 'svc/hub/state', true],
    [admin, 'anything/at/all', true],
    [admin, 'boards/vend1/cmd', true],
    [admin, 'boards/esp1/cmd', true],
    [admin, 'boards/vend1/coin', false],
    [admin, 'boards/vend1/info', false],
    [admin, 'boards/vend1/reply', false],
    [admin, 'boards/esp1/availability', false],
    [admin, 'boards//availability', false],
    [admin, 'svc/x', false],
    [admin, '$SYS/broker/x', false],
    [anon, 'plant/p1/alarm', true],
    [anon, 'boards/b1/s1', true],
    [anon, 'boards/vend1/coin', false],
    [anon, 'boards/x/availability', false],
    [anon, 'boards/vend1/cmd', false],
    [reader, 'notes/x', false],
    [reader, 'boards/esp1/temp', false],
    [esp, 'boards/esp1/temp', true],
    [esp, 'boards/esp1/a/b', true],
    [esp, 'boards/esp1/reply', true],
    [esp, 'boards/esp1', false],
    [esp, 'boards/esp1/availability', false],
    [esp, 'boards/esp1/cmd', false],
    [esp, 'boards/esp2/temp', false],
    [esp, 'boards/esp-acct/temp', false],
    [esp, 'other/x', false],
    [esp, 'boards/esp1/\u0000x', false],
    [admin, 'a\u0000', false],
  ]
  for (const [who, topic, allowed] of cases) {
    const v = mayPublish(who, topic, owned)
    t.equal(
      v.ok,
      allowed,
      `${who.kind === 'account' ? who.role : who.kind} → ${topic}: ${v.ok ? 'ok' : v.error}`,
    )
  }
  t.match(mayPublish(esp, 'boards/esp2/t', owned), {
    ok: false,
    code: 'FORBIDDEN',
    error: /may publish only under boards\/esp1\//,
  })
  t.match(mayPublish(admin, 'boards/vend1/coin', owned), {
    ok: false,
    code: 'FORBIDDEN',
    error: /hub's own port/,
  })
  // A topic no one may use is the publisher's mistake, not a right it lacks.
  t.match(mayPublish(admin, 'a\u0000', owned), { ok: false, code: 'BAD_INPUT' })
  t.match(maySubscribe(admin, 'a\u0000'), { ok: false, code: 'BAD_INPUT' })
})

t.test('maySubscribe', async (t) => {
  const cases: [Principal, string, boolean][] = [
    [admin, '#', true],
    [reader, '#', true],
    [reader, '$SYS/#', true],
    [anon, 'boards/+/availability', true],
    [esp, 'boards/esp1/#', true],
    [esp, 'boards/esp1/cmd', true],
    [esp, 'boards/esp1/+', true],
    [esp, '#', false],
    [esp, 'boards/#', false],
    [esp, 'boards/+/cmd', false],
    [esp, 'boards/esp1', false],
    [esp, 'boards/esp2/#', false],
    [esp, 'boards/esp1/\u0000', false],
    [reader, '\u0000/#', false],
  ]
  for (const [who, filter, allowed] of cases)
    t.equal(
      maySubscribe(who, filter).ok,
      allowed,
      `${who.kind === 'account' ? who.role : who.kind} ← ${filter}`,
    )
})

t.test('loopback binds', async (t) => {
  for (const h of [
    '127.0.0.1',
    '127.1.2.3',
    'localhost',
    'LOCALHOST',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
  ])
    t.ok(isLoopbackHost(h), h)
  for (const h of ['0.0.0.0', '::', '192.168.1.10', 'hub.local', '10.0.0.1', '::ffff:10.0.0.1', '128.0.0.1'])
    t.notOk(isLoopbackHost(h), h)
})

t.test('passwords: scrypt PHC strings, per-user salt, bounded parameters', async (t) => {
  const a = await hashPassword('correct horse battery')
  const b = await hashPassword('correct horse battery')
  t.match(a, /^\$scrypt\$ln=14,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/)
  t.not(a, b, 'a fresh salt each time')
  const parsed = parseScryptHash(a)
  if (!parsed.ok) throw new Error(parsed.error)
  t.equal(await verifyPassword(Buffer.from('correct horse battery'), parsed.value), true)
  t.equal(await verifyPassword(Buffer.from('correct horse batterY'), parsed.value), false)
  t.match(parseScryptHash('$scrypt$ln=30,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$' + 'A'.repeat(43)), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /out of range/,
  })
  t.match(parseScryptHash('$scrypt$ln=20,r=32,p=1$AAAAAAAAAAAAAAAAAAAAAA$' + 'A'.repeat(43)), {
    ok: false,
    error: /more than 256 MiB/,
  })
  t.match(parseScryptHash('$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA'), { ok: false })
  t.match(parseScryptHash('$scrypt$ln=14,r=8,p=1$AAAA$' + 'A'.repeat(43)), {
    ok: false,
    error: /salt shorter/,
  })
  t.equal(passwordError(''), 'the password is empty')
  t.match(passwordError('short'), /shorter than 12/)
  t.match(passwordError('long enough but\nwith a newline'), /control character/)
  t.match(passwordError('x'.repeat(1025)), /longer than 1024 bytes/)
  t.equal(passwordError('twelve chars'), null)
})

t.test('the accounts file: round trip, and the first bad line named', async (t) => {
  const hash = await hashPassword('correct horse battery')
  const text = formatAccounts([
    { name: 'zed', role: 'reader', board: null, hash },
    { name: 'esp1', role: 'board', board: 'esp1', hash },
  ])
  const back = parseAccounts(text, 'f')
  if (!back.ok) throw new Error(back.error)
  t.same(
    back.accounts.map((a) => [a.name, a.role, a.board]),
    [
      ['esp1', 'board', 'esp1'],
      ['zed', 'reader', null],
    ],
    'sorted by name, comments skipped',
  )
  const bad: [string, RegExp][] = [
    [`a:admin:x:${hash}`, /f:1: account "a": only role board names a board/],
    [`a:board::${hash}`, /f:1: account "a": role board needs a board name/],
    [`a b:admin::${hash}`, /f:1: user name "a b" must match/],
    [`a:root::${hash}`, /f:1: unknown role "root"/],
    ['a:admin::', /f:1: account "a": not a \$scrypt\$/],
    [`# c\n\na:admin::${hash}\na:reader::${hash}`, /f:4: account "a" appears twice/],
    ['just garbage', /f:1: expected name:role:board:hash/],
  ]
  for (const [body, err] of bad)
    t.match(parseAccounts(body, 'f'), { ok: false, code: 'BAD_CONFIG', error: err }, body.slice(0, 30))
})

t.test('hub.toml: the TLS listener keys', async (t) => {
  const env = { SVC_HOME: '/tmp/svc-home-unused' }
  const ok = parseConfig(
    '[broker]\nhost = "127.0.0.1"\ntls_port = 8883\nwss_port = 0\ntls_cert = "certs/b.crt"\ntls_key = "/k/b.key"\n',
    '/etc/svc/hub.toml',
    env,
  )
  t.match(ok, {
    ok: true,
    config: {
      broker: {
        tls: { host: '127.0.0.1', port: 8883, wssPort: 0, cert: '/etc/svc/certs/b.crt', key: '/k/b.key' },
      },
    },
  })
  const lan = parseConfig(
    '[broker]\ntls_port = 8883\ntls_cert = "c"\ntls_key = "k"\ntls_host = "0.0.0.0"\n',
    '/h.toml',
    env,
  )
  t.match(lan, { ok: true, config: { broker: { host: '127.0.0.1', tls: { host: '0.0.0.0' } } } })
  t.match(parseConfig('', null, env), { ok: true, config: { broker: { tls: null } } }, 'off by default')
  const bad: [string, RegExp][] = [
    ['[broker]\ntls_port = 8883\n', /broker\.tls_port: needs broker\.tls_cert and broker\.tls_key/],
    [
      '[broker]\nwss_port = 8884\ntls_cert = "c"\n',
      /broker\.wss_port: needs broker\.tls_cert and broker\.tls_key/,
    ],
    ['[broker]\ntls_cert = "c"\ntls_key = "k"\n', /apply only with broker\.tls_port or broker\.wss_port/],
    ['[broker]\ntls_port = 70000\ntls_cert = "c"\ntls_key = "k"\n', /broker\.tls_port: must be <= 65535/],
    ['[broker]\ntls_port = 1\ntls_cert = ""\ntls_key = "k"\n', /broker\.tls_cert/],
  ]
  for (const [text, err] of bad) t.match(parseConfig(text, '/h.toml', env), { ok: false, error: err }, text)
})
