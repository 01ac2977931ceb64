// market.toml parsing: defaults, every section, and bad values named by field.
import t from 'tap'
import { defaultsOf } from '../../config/sections.ts'
import { chainFromInfo, defaultConfig, parseMarketConfig } from '../../market/config.ts'
import { MarketTomlSchema } from '../../market/config-schema.ts'

const parse = (text: string) => parseMarketConfig(text, '/etc/svc/market.toml', '/var/svc/market')

t.test('defaults', async (t) => {
  const r = parse('')
  t.ok(r.ok)
  if (!r.ok) return
  t.equal(r.config.sessionSeconds, 7 * 24 * 3600, 'sessions last 7 days')
  t.equal(r.config.challengeSeconds, 600, 'challenges expire after 10 minutes')
  t.equal(r.config.displayName, 'svc')
  t.equal(r.config.dataDir, '/var/svc/market')
  t.equal(r.config.chain, null)
})

t.test('every section', async (t) => {
  const r = parse(`
displayName = "Acme"
port = 9000
publicUrl = "https://market.example/some/path"
trustProxy = true
dataDir = "data"
samples = false
[session]
lifetimeSeconds = 3600
cookieSecret = "${'s'.repeat(40)}"
[challenge]
ttlSeconds = 120
[ipfs]
api = "http://127.0.0.1:5001"
[chain]
rpcUrl = "http://127.0.0.1:8545"
identityRegistry = "0x5fbdb2315678afecb367f032d93f642f64180aa3"
validationRegistry = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
attestor = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"
payout = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"
batchSize = 100
[rateLimit.verify]
max = 5
windowSeconds = 10
`)
  t.ok(r.ok, r.ok ? '' : r.error)
  if (!r.ok) return
  const c = r.config
  t.equal(c.displayName, 'Acme')
  t.equal(c.port, 9000)
  t.equal(c.publicUrl, 'https://market.example', 'an origin only')
  t.equal(c.dataDir, '/etc/svc/data', 'relative to the config file')
  t.equal(c.sessionSeconds, 3600)
  t.equal(c.challengeSeconds, 120)
  t.equal(c.ipfsApi, 'http://127.0.0.1:5001')
  t.equal(c.chain?.identityRegistry, '0x5FbDB2315678afecb367f032d93F642f64180aa3', 'checksummed')
  t.equal(c.chain?.batchSize, 100)
  t.equal(c.chain?.chainId, 10143)
  t.same(c.rateLimits.verify, { max: 5, windowSeconds: 10 })
  t.same(c.rateLimits.purchase, defaultConfig('x').rateLimits.purchase, 'others keep their defaults')
})

t.test('bad values name the field', async (t) => {
  const cases: [string, RegExp][] = [
    ['port = 70000', /port: must be an integer from 0 to 65535/],
    ['port = "80"', /port: must be an integer/],
    ['colour = "red"', /colour: unknown field/],
    ['publicUrl = "ftp://x"', /publicUrl: must be an absolute http\(s\) URL/],
    ['displayName = ""', /displayName: must be a non-empty string/],
    ['[session]\nlifetimeSeconds = 10', /session\.lifetimeSeconds: must be an integer from 60/],
    ['[session]\ncookieSecret = "short"', /session\.cookieSecret: must be at least 32 characters/],
    ['[chain]\nrpcUrl = "http://x"', /chain\.identityRegistry: required when chain\.rpcUrl is set/],
    ['[chain]\nidentityRegistry = "0x5fbdb2315678afecb367f032d93f642f64180aa3"', /chain\.rpcUrl: required/],
    [
      '[chain]\nrpcUrl = "http://x"\nidentityRegistry = "0x12"',
      /chain\.identityRegistry: must be a 0x address/,
    ],
    ['[rateLimit.verify]\nmax = 0', /rateLimit\.verify\.max: must be an integer from 1/],
    ['[rateLimit.nope]\nmax = 1', /rateLimit\.nope: unknown field/],
    ['samples = "yes"', /samples: must be true or false/],
    ['port = ', /market\.toml:1:\d+: /],
  ]
  for (const [text, re] of cases) {
    const r = parse(text)
    t.notOk(r.ok, text)
    if (!r.ok) {
      t.match(r.error, re, text)
      // A TOML syntax error names the line and column after the file: `market.toml:1:8: …`.
      t.match(r.error, /^\/etc\/svc\/market\.toml(:\d+:\d+)?: /, 'names the file')
    }
  }
})

t.test('chain from a chain file; market.toml overrides payout and attestor', async (t) => {
  const info = {
    version: 1 as const,
    rpcUrl: 'http://127.0.0.1:8545',
    chainId: 10143 as const,
    identityRegistry: '0x5fbdb2315678afecb367f032d93f642f64180aa3' as const,
    validationRegistry: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512' as const,
    agentId: '0',
    attestorAddress: '0x90f79bf6eb2c4f870365e785982e1f101e93b906' as const,
  }
  const noPayout = chainFromInfo(defaultConfig('/d'), info)
  t.notOk(noPayout.ok)
  if (!noPayout.ok) t.match(noPayout.error, /set chain.payout/)
  const r = parse('[chain]\npayout = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"\nfile = "chain.json"')
  t.ok(r.ok)
  if (!r.ok) return
  t.equal(r.config.chainFile, '/etc/svc/chain.json')
  const c = chainFromInfo(r.config, info)
  t.ok(c.ok)
  if (c.ok) {
    t.equal(c.config.chain?.payout, '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc')
    t.equal(c.config.chain?.attestor, '0x90F79bf6EB2c4f870365E785982E1f101E93b906')
  }
})

t.test(
  'explorerUrl: absent is null; an http(s) URL is kept without a trailing slash; else named',
  async (t) => {
    const none = parse('')
    t.equal(none.ok && none.config.explorerUrl, null)
    const r = parse('explorerUrl = "https://testnet.monadexplorer.com/"')
    t.equal(r.ok && r.config.explorerUrl, 'https://testnet.monadexplorer.com')
    for (const bad of ['"ftp://x"', '"not a url"', '3'])
      t.match(
        parse(`explorerUrl = ${bad}`),
        { ok: false, error: /explorerUrl: must be an absolute http\(s\) URL/ },
        bad,
      )
  },
)

t.test(
  'a dev chain file names the funded buyer for the website guide; a real network does not',
  async (t) => {
    const info = {
      version: 1 as const,
      rpcUrl: 'http://127.0.0.1:8545',
      chainId: 10143 as const,
      identityRegistry: '0x5fbdb2315678afecb367f032d93f642f64180aa3' as const,
      validationRegistry: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512' as const,
      agentId: '0',
      attestorAddress: '0x90F79bf6EB2c4f870365E785982E1f101E93b906' as const,
    }
    const { devAccounts } = await import('../../chain/accounts.ts')
    const accounts = devAccounts()
    const dev = chainFromInfo(defaultConfig('/d'), { ...info, accounts })
    t.same(dev.ok && dev.config.chain?.devBuyer, accounts.buyer)
    const base = defaultConfig('/d')
    base.chainOverrides = {
      attestor: undefined,
      payout: accounts.payout.address,
      batchSize: 500,
      concurrency: 2,
    }
    const real = chainFromInfo(base, info)
    t.equal(real.ok && real.config.chain?.devBuyer, undefined)
  },
)

t.test('market.toml is checked as hub.toml is: `section.key: problem`, every problem at once', async (t) => {
  const cases: [string, string][] = [
    ['[session]\nlifetime = 60\n', 'session.lifetime: unknown field'],
    [
      '[session]\nlifetimeSeconds = "1h"\n',
      'session.lifetimeSeconds: must be an integer from 60 to 31622400',
    ],
    ['[verify]\nintervalSeconds = true\n', 'verify.intervalSeconds: must be an integer from 0 to 604800'],
    [
      '[chain]\nbatch_size = 10\n',
      'chain.batch_size: unknown field (market.toml keys are camelCase: batchSize)',
    ],
    ['[chain]\nconcurrency = 0\n', 'chain.concurrency: must be an integer from 1 to 64'],
    [
      '[rateLimit.keys]\nwindowSeconds = "60"\n',
      'rateLimit.keys.windowSeconds: must be an integer from 1 to 86400',
    ],
    ['[ipfs]\napi = 5001\n', 'ipfs.api: must be a non-empty string'],
    ['session = 3\n', 'session: must be object'],
    [
      'port = -1\nsamples = 1\nfoo = 2\n',
      'foo: unknown field; port: must be an integer from 0 to 65535; samples: must be true or false',
    ],
  ]
  for (const [text, problem] of cases)
    t.same(
      parseMarketConfig(text, 'market.toml', '/d'),
      { ok: false, code: 'BAD_CONFIG', error: `market.toml: ${problem}` },
      text,
    )
})

t.test("the defaults are the table's (market/config-schema.ts)", async (t) => {
  const table = defaultsOf(MarketTomlSchema)
  const r = parse('[chain]\nfile = "chain.json"\n')
  if (!r.ok) throw new Error(r.error)
  const c = r.config
  t.equal(c.port, table.get('port'))
  t.equal(c.displayName, table.get('displayName'))
  t.equal(c.samples, table.get('samples'))
  t.equal(c.sessionSeconds, table.get('session.lifetimeSeconds'))
  t.equal(c.challengeSeconds, table.get('challenge.ttlSeconds'))
  t.equal(c.reverifySeconds, table.get('verify.intervalSeconds'))
  t.equal(c.chainOverrides?.batchSize, table.get('chain.batchSize'))
  t.equal(c.chainOverrides?.concurrency, table.get('chain.concurrency'))
  for (const [name, limit] of Object.entries(c.rateLimits)) {
    t.equal(limit.max, table.get(`rateLimit.${name}.max`), `rateLimit.${name}.max`)
    t.equal(
      limit.windowSeconds,
      table.get(`rateLimit.${name}.windowSeconds`),
      `rateLimit.${name}.windowSeconds`,
    )
  }
  const none = parse('')
  t.same(none.ok && none.config, defaultConfig('/var/svc/market'), 'no file: the same settings')
})
