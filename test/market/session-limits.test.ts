// Sessions (expiry, tampering, Secure behind HTTPS), rate limits, and `svc market` as a process.
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { writeChainFile } from '../../hub/files/chain-file.ts'
import { startDevChain } from '../../chain/dev.ts'
import { tempDir } from '../helpers/tmp.ts'
import { api, issueKey, signIn, startMarket } from './market-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { owner } = dev.accounts

t.test('sessions: expired and tampered cookies are not signed in', async (t) => {
  const { url, market } = await startMarket(t, dev)
  const cookie = await signIn(url, owner.privateKey)
  t.equal((await api(url, '/api/auth/session', { cookie })).status, 200)
  const tampered = cookie.replace(/svc_session=(.)/, (_, c: string) => `svc_session=${c === 'A' ? 'B' : 'A'}`)
  t.equal(
    (await api(url, '/api/auth/session', { cookie: tampered })).status,
    401,
    'a cookie whose signature does not match',
  )
  t.equal((await api(url, '/api/marketplace/keys', { cookie: 'svc_session=made-up' })).status, 401)
  for await (const s of market.ctx.db.sessions.values())
    await market.ctx.db.sessions.put(s.id, { ...s, expiresAt: Date.now() - 1 })
  const r = await api(url, '/api/marketplace/keys', { cookie })
  t.equal(r.status, 401, 'expired')
  t.match(r.json.error, /sign in first/)
})

t.test(
  'behind HTTPS (publicUrl https, trustProxy): Secure cookie, SIWE domain and origin from publicUrl',
  async (t) => {
    const { url } = await startMarket(t, dev, (c) => {
      c.publicUrl = 'https://market.example'
      c.trustProxy = true
      c.sessionSeconds = 3600
    })
    const acc = privateKeyToAccount(owner.privateKey)
    const nonce = (await api(url, '/api/auth/nonce')).json.nonce as string
    const message = createSiweMessage({
      domain: 'market.example',
      address: acc.address,
      chainId: 10143,
      nonce,
      uri: 'https://market.example',
      version: '1',
    })
    const signature = await acc.signMessage({ message })
    const res = await fetch(url + '/api/auth/verify', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        origin: 'https://market.example',
        'x-forwarded-proto': 'https',
      },
      body: JSON.stringify({ message, signature }),
    })
    t.equal(res.status, 200, await res.clone().text())
    const set = res.headers.getSetCookie().find((c) => c.startsWith('svc_session='))!
    t.match(set, /Secure/)
    t.match(set, /Max-Age=3600/, 'configured lifetime')
    const cookie = set.split(';')[0]!
    const cross = await api(url, '/api/marketplace/challenges', {
      body: { kind: 'key', agentId: '0', wallet: acc.address },
      cookie,
      headers: { origin: url },
    })
    t.equal(cross.status, 403, 'the loopback origin is not the public origin')
    const same = await api(url, '/api/marketplace/challenges', {
      body: { kind: 'key', agentId: '0', wallet: acc.address },
      cookie,
      headers: { origin: 'https://market.example' },
    })
    t.equal(same.status, 201)
  },
)

t.test('rate limits on challenge, key, verify and purchase routes answer 429 {error}', async (t) => {
  const { url } = await startMarket(t, dev, (c) => {
    c.rateLimits.challenges = { max: 2, windowSeconds: 60 }
    c.rateLimits.keys = { max: 1, windowSeconds: 60 }
    c.rateLimits.verify = { max: 1, windowSeconds: 60 }
    c.rateLimits.purchase = { max: 1, windowSeconds: 60 }
  })
  const cookie = await signIn(url, owner.privateKey)
  const k = await issueKey(url, cookie, owner.privateKey, dev.agentId)
  t.equal(k.status, 201, 'first key within the limit (one challenge, one key call)')
  const ch = await api(url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: '0', wallet: owner.address },
    cookie,
  })
  t.equal(ch.status, 201, 'second challenge within the limit')
  const ch3 = await api(url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: '0', wallet: owner.address },
    cookie,
  })
  t.equal(ch3.status, 429)
  t.match(ch3.json.error, /rate limited: at most 2 requests per/)
  const k2 = await api(url, '/api/marketplace/keys', {
    body: { challengeId: ch.json.id, signature: '0x00' },
    cookie,
  })
  t.equal(k2.status, 429)
  const v1 = await api(url, '/api/marketplace/listings/sample-arm-picks/verify', { method: 'POST' })
  t.equal(v1.status, 200)
  const v2 = await api(url, '/api/marketplace/listings/sample-arm-picks/verify', { method: 'POST' })
  t.equal(v2.status, 429)
  const body = { txHash: `0x${'11'.repeat(32)}`, signature: '0x00' }
  await api(url, '/api/marketplace/listings/sample-arm-picks/purchase', { body, cookie })
  const p2 = await api(url, '/api/marketplace/listings/sample-arm-picks/purchase', { body, cookie })
  t.equal(p2.status, 429)
  t.equal((await api(url, '/api/marketplace/listings')).status, 200, 'listing reads are not limited')
})

t.test('svc market runs from a config file and stops on SIGTERM', async (t) => {
  const dir = await tempDir(t, 'svc-market-cli-')
  const chainFile = join(dir, 'chain.json')
  await writeChainFile(chainFile, dev.info)
  const cfg = join(dir, 'market.toml')
  await writeFile(cfg, `displayName = "CLI test"\nport = 0\ndataDir = "data"\n[chain]\nfile = "chain.json"\n`)
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'market', '--config', cfg], {
    env: { ...process.env, SVC_HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => {
    if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGKILL')
  })
  let out = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)))
  })
  const r = await api(url, '/api/marketplace/listings')
  t.equal(r.status, 200)
  t.ok((r.json.total as number) >= 2, 'samples seeded')
  const n = (await api(url, '/api/auth/nonce')).json.nonce as string
  t.ok(n)
  const code = await new Promise<number | null>((resolve) => {
    child.on('exit', (c) => resolve(c))
    process.kill(child.pid!, 'SIGTERM')
  })
  t.equal(code, 0)
})

t.test('svc market refuses a bad config with one line', async (t) => {
  const dir = await tempDir(t, 'svc-market-cli-')
  const cfg = join(dir, 'market.toml')
  await writeFile(cfg, 'port = 99999\n')
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'market', '--config', cfg], {
    env: { ...process.env, SVC_HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let err = ''
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  t.equal(code, 1)
  t.match(err, /svc market: .*market\.toml: port: must be an integer from 0 to 65535/)
  t.equal(err.trim().split('\n').length, 1, 'one line, no stack trace')
  const empty = await tempDir(t, 'svc-market-home-')
  const missing = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'market'], {
    env: { ...process.env, SVC_HOME: empty },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let err2 = ''
  missing.stderr.on('data', (d: Buffer) => (err2 += d.toString()))
  t.equal(await new Promise<number | null>((resolve) => missing.on('close', resolve)), 1)
  t.match(err2, /chain file .* not found/, 'no chain: says how to get one')
})

t.test(
  'with [ipfs] api set, an unreachable Kubo node fails the upload with 502 and stores nothing',
  async (t) => {
    const { freePort } = await import('../helpers/ports.ts')
    const { dataset, postListing } = await import('./market-helpers.ts')
    const kubo = `http://127.0.0.1:${await freePort()}`
    const { url, market } = await startMarket(t, dev, (c) => {
      c.ipfsApi = kubo
    })
    const cookie = await signIn(url, owner.privateKey)
    const key = (await issueKey(url, cookie, owner.privateKey, dev.agentId)).json.key as string
    const count = async () => {
      let n = 0
      for await (const _ of market.ctx.db.listings.values()) n++
      return n
    }
    const before = await count()
    const r = await postListing(url, key, dataset(3, dev.agentId))
    t.equal(r.status, 502)
    t.equal(r.json.code, 'UNREACHABLE')
    t.match(r.json.error, new RegExp(`pinning .*ipfs.api ${kubo} unreachable`))
    t.equal(await count(), before, 'no listing stored')
  },
)
