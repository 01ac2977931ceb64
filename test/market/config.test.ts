// market.toml parsing: defaults, every section, and bad values named by field.
import t from 'tap'
import { chainFromInfo, defaultConfig, parseMarketConfig } from '../../market/config.ts'

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
    ['port = 70000', /port must be an integer from 0 to 65535/],
    ['port = "80"', /port must be an integer/],
    ['colour = "red"', /colour is not a known setting/],
    ['publicUrl = "ftp://x"', /publicUrl must be an absolute http\(s\) URL/],
    ['displayName = ""', /displayName must be a non-empty string/],
    ['[session]\nlifetimeSeconds = 10', /session.lifetimeSeconds must be an integer from 60/],
    ['[session]\ncookieSecret = "short"', /session.cookieSecret must be at least 32 characters/],
    ['[chain]\nrpcUrl = "http://x"', /chain.identityRegistry is required/],
    ['[chain]\nidentityRegistry = "0x5fbdb2315678afecb367f032d93f642f64180aa3"', /chain.rpcUrl is required/],
    [
      '[chain]\nrpcUrl = "http://x"\nidentityRegistry = "0x12"',
      /chain.identityRegistry must be a 0x address/,
    ],
    ['[rateLimit.verify]\nmax = 0', /rateLimit.verify.max must be an integer from 1/],
    ['[rateLimit.nope]\nmax = 1', /rateLimit.nope is not a known setting/],
    ['samples = "yes"', /samples must be true or false/],
    ['port = ', /market.toml/],
  ]
  for (const [text, re] of cases) {
    const r = parse(text)
    t.notOk(r.ok, text)
    if (!r.ok) {
      t.match(r.error, re, text)
      t.match(r.error, /^\/etc\/svc\/market\.toml: /, 'names the file')
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
      t.match(parse(`explorerUrl = ${bad}`), { ok: false, error: /explorerUrl must be/ }, bad)
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
