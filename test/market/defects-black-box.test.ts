// Three defects a black-box client found against the market API (market/API.md), and nosniff on downloads, each
// against a real market over a real anvil chain: the SIWE domain comes from configuration (never
// the Host header), a refused upload leaves its keep-alive connection usable, and every
// POST /api/marketplace/keys revokes the caller's stale keys whatever else it answers.
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { identityRegistryAbi } from '../../chain/abi.generated.ts'
import { anvilAccount } from '../../chain/accounts.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { registerAgent } from '../../chain/deploy.ts'
import { startDevChain } from '../../chain/dev.ts'
import { defaultConfig } from '../../market/config.ts'
import { startMarketServer } from '../../market/server.ts'
import { api, dataset, goodFields, issueKey, postListing, signIn, startMarket } from './market-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url } = await startMarket(t, dev)
const { owner } = dev.accounts

/** POST with a chosen Host header (fetch does not let a caller set it). */
function postWithHost(path: string, host: string, body: unknown): Promise<{ status: number; text: string }> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: 'POST',
        headers: { host, 'content-type': 'application/json' },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode!, text }))
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

t.test('SIWE: a message for another domain is refused even with a matching Host header', async (t) => {
  const account = privateKeyToAccount(owner.privateKey)
  const n = await api(url, '/api/auth/nonce')
  const message = createSiweMessage({
    domain: 'evil.example',
    address: account.address,
    chainId: 10143,
    nonce: n.json.nonce as string,
    uri: 'https://evil.example/',
    version: '1',
  })
  const signature = await account.signMessage({ message })
  const r = await postWithHost('/api/auth/verify', 'evil.example', { message, signature })
  t.equal(r.status, 400, r.text)
  t.match(r.text, `message: domain is evil.example, expected ${new URL(url).host}`)
  // The listen address is the domain on loopback: the usual sign-in still works.
  t.match(await signIn(url, owner.privateKey), /^svc_session=/)
})

t.test('SIWE: publicUrl wins over the listen address', async (t) => {
  const m = await startMarket(t, dev, (c) => {
    c.publicUrl = 'https://market.example'
  })
  const account = privateKeyToAccount(owner.privateKey)
  const n = await api(m.url, '/api/auth/nonce')
  const message = createSiweMessage({
    domain: new URL(m.url).host,
    address: account.address,
    chainId: 10143,
    nonce: n.json.nonce as string,
    uri: m.url,
    version: '1',
  })
  const signature = await account.signMessage({ message })
  const r = await api(m.url, '/api/auth/verify', { body: { message, signature } })
  t.equal(r.status, 400)
  t.match(r.json.error, /expected market\.example/)
})

t.test('a market listening beyond loopback without publicUrl refuses to start', async (t) => {
  const c = { ...defaultConfig('/nonexistent/svc-market'), host: '0.0.0.0', port: 0 }
  await t.rejects(startMarketServer(c), /host 0\.0\.0\.0 is not loopback: set publicUrl/)
  await t.rejects(startMarketServer({ ...c, host: '::' }), /host :: is not loopback: set publicUrl/)
})

/** Reads one HTTP/1.1 response (status line, headers, Content-Length body) off a socket. */
function readResponse(sock: Socket, buffered: { buf: Buffer }): Promise<{ status: number; head: string }> {
  return new Promise((resolve, reject) => {
    const tryParse = (): boolean => {
      const end = buffered.buf.indexOf('\r\n\r\n')
      if (end < 0) return false
      const head = buffered.buf.subarray(0, end).toString('latin1')
      const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
      if (buffered.buf.length < end + 4 + len) return false
      buffered.buf = buffered.buf.subarray(end + 4 + len)
      sock.off('data', onData)
      sock.off('close', onClose)
      resolve({ status: Number(head.split(' ')[1]), head })
      return true
    }
    const onData = (c: Buffer) => {
      buffered.buf = Buffer.concat([buffered.buf, c])
      tryParse()
    }
    const onClose = () => reject(new Error('connection closed before a response'))
    sock.once('error', reject)
    if (tryParse()) return
    sock.on('data', onData)
    sock.on('close', onClose)
  })
}

t.test('a refused 6 MiB image leaves the keep-alive connection answering', async (t) => {
  const cookie = await signIn(url, owner.privateKey)
  const key = (await issueKey(url, cookie, owner.privateKey, dev.agentId)).json.key as string
  const ds = dataset(3, dev.agentId)
  const boundary = 'svcboundary7d2c'
  const part = (name: string, body: Buffer, file?: string): Buffer =>
    Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"` +
          (file ? `; filename="${file}"\r\nContent-Type: application/octet-stream` : '') +
          '\r\n\r\n',
      ),
      body,
      Buffer.from('\r\n'),
    ])
  const png = Buffer.alloc(6 * 1024 * 1024, 0xff)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(png)
  const body = Buffer.concat([
    ...Object.entries(goodFields).map(([k, v]) => part(k, Buffer.from(v))),
    part('manifest', Buffer.from(JSON.stringify(ds.manifest)), 'manifest.json'),
    part('data', Buffer.from(ds.data), 'operations.jsonl'),
    part('image', png, 'cover.png'),
    Buffer.from(`--${boundary}--\r\n`),
  ])
  const u = new URL(url)
  const sock = connect(Number(u.port), u.hostname)
  t.teardown(() => sock.destroy())
  await new Promise<void>((r) => sock.once('connect', () => r()))
  const buffered = { buf: Buffer.alloc(0) }
  sock.write(
    `POST /api/agent/listings HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`,
  )
  sock.write(body)
  const first = await readResponse(sock, buffered)
  t.equal(first.status, 413)
  t.notMatch(first.head, /\r\nconnection: *close/i, 'the connection is kept: the body was drained')
  sock.write(`GET /api/auth/nonce HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`)
  const second = await readResponse(sock, buffered)
  t.equal(second.status, 200, 'the next request on the same connection is answered')
})

t.test(
  'every POST /api/marketplace/keys revokes the caller’s keys whose wallet lost the agent',
  async (t) => {
    const holder = anvilAccount(6)
    const newOwner = anvilAccount(7)
    const w = walletClientFor(dev.rpcUrl, holder.privateKey)
    const pub = publicClientFor(dev.rpcUrl)
    const cookie = await signIn(url, holder.privateKey)
    const cases: [string, unknown, number][] = [
      ['a body failing validation', {}, 400],
      ['an unknown challengeId', { challengeId: 'no-such-challenge', signature: '0x1234' }, 404],
    ]
    for (const [what, body, status] of cases) {
      const agentId = (await registerAgent(w, pub, dev.identityRegistry, `svc://agents/${status}`)).toString()
      const k = await issueKey(url, cookie, holder.privateKey, agentId)
      t.equal(k.status, 201, JSON.stringify(k.json))
      const tx = await w.writeContract({
        address: dev.identityRegistry,
        abi: identityRegistryAbi,
        functionName: 'transferFrom',
        args: [holder.address, newOwner.address, BigInt(agentId)],
      })
      await pub.waitForTransactionReceipt({ hash: tx })
      const before = (await api(url, '/api/marketplace/keys', { cookie })).json.keys as Record<
        string,
        unknown
      >[]
      t.equal(before.find((x) => x.id === k.json.id)!.status, 'active', `${what}: active before the call`)
      const r = await api(url, '/api/marketplace/keys', { body, cookie })
      t.equal(r.status, status, `${what}: ${JSON.stringify(r.json)}`)
      const after = (await api(url, '/api/marketplace/keys', { cookie })).json.keys as Record<
        string,
        unknown
      >[]
      const old = after.find((x) => x.id === k.json.id)!
      t.equal(old.status, 'revoked', `${what}: revoked by the call`)
      t.match(old.revokedReason, /no longer holds agent/)
    }
  },
)

t.test('a chain that cannot be reached does not turn a 400 into a 502', async (t) => {
  const m = await startMarket(t, dev, undefined, { info: { rpcUrl: 'http://127.0.0.1:1' } })
  // Sign-in needs no chain; the stale-key check cannot reach it and is left to the next call.
  const cookie = await signIn(m.url, owner.privateKey)
  // A key of this account, so the check has an agent to read (a key cannot be issued here).
  const account = owner.address.toLowerCase()
  await m.market.ctx.db.keys.put('stale-check', {
    id: 'stale-check',
    hash: 'h',
    prefix: 'p',
    agentId: dev.agentId,
    wallet: account,
    account,
    device: null,
    createdAt: Date.now(),
    revokedAt: null,
    revokedReason: null,
  })
  const r = await api(m.url, '/api/marketplace/keys', { body: {}, cookie })
  t.equal(r.status, 400, JSON.stringify(r.json))
  t.match(r.json.error, /challengeId/)
  t.equal((await m.market.ctx.db.keys.get('stale-check'))!.revokedAt, null, 'left for the next call')
})

t.test('downloads and the image carry X-Content-Type-Options: nosniff', async (t) => {
  const cookie = await signIn(url, owner.privateKey)
  const key = (await issueKey(url, cookie, owner.privateKey, dev.agentId)).json.key as string
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4])
  const l = await postListing(url, key, dataset(3, dev.agentId), { image: png })
  t.equal(l.status, 201)
  for (const part of ['data', 'manifest']) {
    const r = await api(url, `/api/marketplace/listings/${l.json.slug}/file?part=${part}`, { cookie })
    t.equal(r.status, 200)
    t.equal(r.headers.get('x-content-type-options'), 'nosniff', part)
  }
  const img = await api(url, `/api/marketplace/listings/${l.json.slug}/image`)
  t.equal(img.headers.get('x-content-type-options'), 'nosniff', 'image')
})
