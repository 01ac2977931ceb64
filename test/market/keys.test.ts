// Sign-in, challenges and agent keys against a real anvil chain and a real market on loopback.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { identityRegistryAbi } from '../../chain/abi.generated.ts'
import { walletClientFor, publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { anvilAccount } from '../../chain/accounts.ts'
import { registerAgent } from '../../chain/deploy.ts'
import { api, dataset, issueKey, postListing, signIn, startMarket } from './market-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url, market } = await startMarket(t, dev)
const { owner, device, buyer } = dev.accounts

t.test('sign-in sets a signed HttpOnly SameSite=Lax cookie; the session names the account', async (t) => {
  const account = privateKeyToAccount(owner.privateKey)
  const n = await api(url, '/api/auth/nonce')
  t.equal(n.status, 200)
  t.match(n.json.nonce, /^[A-Za-z0-9]{8,}$/)
  const cookie = await signIn(url, owner.privateKey)
  t.match(cookie, /^svc_session=/)
  const s = await api(url, '/api/auth/session', { cookie })
  t.equal(s.status, 200)
  t.equal(s.json.address, account.address)
  const out = await api(url, '/api/auth/signout', { method: 'POST', cookie })
  t.equal(out.status, 200)
  t.equal((await api(url, '/api/auth/session', { cookie })).status, 401, 'session ended by sign-out')
})

t.test('the cookie attributes', async (t) => {
  const { createSiweMessage } = await import('viem/siwe')
  const account = privateKeyToAccount(owner.privateKey)
  const n = await api(url, '/api/auth/nonce')
  const message = createSiweMessage({
    domain: new URL(url).host,
    address: account.address,
    chainId: 10143,
    nonce: n.json.nonce as string,
    uri: url,
    version: '1',
  })
  const signature = await account.signMessage({ message })
  const res = await fetch(url + '/api/auth/verify', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, signature }),
  })
  const set = res.headers.getSetCookie().find((c) => c.startsWith('svc_session='))!
  t.match(set, /HttpOnly/)
  t.match(set, /SameSite=Lax/)
  t.match(set, /Path=\//)
  t.match(set, /Max-Age=604800/, 'default lifetime 7 days')
  t.notMatch(set, /Secure/, 'plain http on loopback: no Secure flag')
  const replay = await fetch(url + '/api/auth/verify', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, signature }),
  })
  t.equal(replay.status, 401, 'a SIWE nonce is single use')
  t.match(await replay.text(), /nonce/)
})

t.test('sign-in rejections', async (t) => {
  const account = privateKeyToAccount(owner.privateKey)
  const { createSiweMessage } = await import('viem/siwe')
  const mk = async (over: Record<string, unknown>) => {
    const n = await api(url, '/api/auth/nonce')
    return createSiweMessage({
      domain: new URL(url).host,
      address: account.address,
      chainId: 10143,
      nonce: n.json.nonce as string,
      uri: url,
      version: '1',
      ...over,
    })
  }
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    api(url, '/api/auth/verify', { body, headers })
  let m = await mk({ domain: 'evil.example' })
  let r = await post({ message: m, signature: await account.signMessage({ message: m }) })
  t.equal(r.status, 400)
  t.match(r.json.error, /domain/)
  m = await mk({ chainId: 1 })
  r = await post({ message: m, signature: await account.signMessage({ message: m }) })
  t.equal(r.status, 400)
  t.match(r.json.error, /chain id/)
  m = await mk({ expirationTime: new Date(Date.now() - 60_000) })
  r = await post({ message: m, signature: await account.signMessage({ message: m }) })
  t.equal(r.status, 400)
  t.match(r.json.error, /expired/)
  m = await mk({})
  r = await post({
    message: m,
    signature: await privateKeyToAccount(buyer.privateKey).signMessage({ message: m }),
  })
  t.equal(r.status, 401, 'signed by another wallet')
  t.match(r.json.error, /signature/)
  m = await mk({ nonce: 'neverIssued123' })
  r = await post({ message: m, signature: await account.signMessage({ message: m }) })
  t.equal(r.status, 401)
  t.match(r.json.error, /nonce/)
  r = await post({ message: 'hello', signature: '0x00' })
  t.equal(r.status, 400)
  r = await post({ message: 'x' })
  t.equal(r.status, 400)
  t.match(r.json.error, /signature/)
  m = await mk({})
  r = await post(
    { message: m, signature: await account.signMessage({ message: m }) },
    { origin: 'https://evil.example' },
  )
  t.equal(r.status, 403, 'login CSRF refused')
  t.match(r.json.error, /cross-site/)
})

t.test('challenges: session required, six lines in order, bound to the account', async (t) => {
  const noSession = await api(url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: '0', wallet: owner.address },
  })
  t.equal(noSession.status, 401)
  t.match(noSession.json.error, /sign in/)
  const cookie = await signIn(url, owner.privateKey)
  const ch = await api(url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: '0', wallet: owner.address.toLowerCase() },
    cookie,
  })
  t.equal(ch.status, 201)
  const lines = (ch.json.message as string).split('\n')
  t.same(lines.slice(0, 5), [
    'svc marketplace',
    'Issue agent key',
    `wallet: ${owner.address}`,
    'chain: 10143',
    'agent: 0',
  ])
  t.match(lines[5], /^nonce: [0-9a-f]{32}$/)
  t.equal(lines.length, 6)
  for (const [body, field] of [
    [{ kind: 'other', agentId: '0', wallet: owner.address }, 'kind'],
    [{ kind: 'key', agentId: '-1', wallet: owner.address }, 'agentId'],
    [{ kind: 'key', agentId: '01', wallet: owner.address }, 'agentId'],
    [{ kind: 'key', agentId: '0', wallet: '0x1234' }, 'wallet'],
    [{ kind: 'key', agentId: '0' }, 'wallet'],
    [{ kind: 'key', agentId: '0', wallet: owner.address, extra: 1 }, 'additional'],
  ] as const) {
    const r = await api(url, '/api/marketplace/challenges', { body, cookie })
    t.equal(r.status, 400, `refused: ${JSON.stringify(body)}`)
    t.match(r.json.error, new RegExp(field))
  }
  const cross = await api(url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: '0', wallet: owner.address },
    cookie,
    headers: { 'sec-fetch-site': 'cross-site' },
  })
  t.equal(cross.status, 403, 'cross-site POST with the cookie is refused')
})

t.test('key issue: 201 with the key once; listed later without secrets; challenge single use', async (t) => {
  const cookie = await signIn(url, owner.privateKey)
  const ch = await api(url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: '0', wallet: owner.address },
    cookie,
  })
  const signature = await privateKeyToAccount(owner.privateKey).signMessage({
    message: ch.json.message as string,
  })
  const k = await api(url, '/api/marketplace/keys', { body: { challengeId: ch.json.id, signature }, cookie })
  t.equal(k.status, 201)
  t.match(k.json.key, /^svc_[A-Za-z0-9_-]{43}$/)
  t.equal(k.json.prefix, (k.json.key as string).slice(4, 12))
  t.equal(k.json.agentId, '0')
  t.equal(k.json.device, device.address, 'device: the agent wallet on chain')
  t.type(k.json.id, 'string')
  const replay = await api(url, '/api/marketplace/keys', {
    body: { challengeId: ch.json.id, signature },
    cookie,
  })
  t.equal(replay.status, 409, 'replayed challenge refused')
  t.match(replay.json.error, /already used/)
  const list = await api(url, '/api/marketplace/keys', { cookie })
  t.equal(list.status, 200)
  const mine = (list.json.keys as Record<string, unknown>[]).find((x) => x.id === k.json.id)!
  t.ok(mine)
  t.equal(mine.status, 'active')
  t.notOk(JSON.stringify(list.json).includes(k.json.key as string), 'the key is never listed')
  t.notOk('key' in mine || 'hash' in mine)
  t.equal((await api(url, '/api/marketplace/keys')).status, 401)
})

t.test('key issue rejections', async (t) => {
  const cookie = await signIn(url, owner.privateKey)
  const otherCookie = await signIn(url, buyer.privateKey)
  const ownerAcc = privateKeyToAccount(owner.privateKey)
  const newCh = async (c = cookie, wallet = owner.address, agentId = '0') =>
    (await api(url, '/api/marketplace/challenges', { body: { kind: 'key', agentId, wallet }, cookie: c }))
      .json as { id: string; message: string }

  // 403: the signer is not ownerOf(agent)
  const buyerCh = await newCh(otherCookie, buyer.address)
  let r = await api(url, '/api/marketplace/keys', {
    body: {
      challengeId: buyerCh.id,
      signature: await privateKeyToAccount(buyer.privateKey).signMessage({ message: buyerCh.message }),
    },
    cookie: otherCookie,
  })
  t.equal(r.status, 403, 'non-owner gets 403')
  t.match(r.json.error, /not the owner of agent 0/)

  // signature by another wallet than the challenge's
  let ch = await newCh()
  r = await api(url, '/api/marketplace/keys', {
    body: {
      challengeId: ch.id,
      signature: await privateKeyToAccount(buyer.privateKey).signMessage({ message: ch.message }),
    },
    cookie,
  })
  t.equal(r.status, 403)
  t.match(r.json.error, /not by the challenge wallet/)
  // still usable after a refused attempt: a rejection changes nothing
  r = await api(url, '/api/marketplace/keys', {
    body: { challengeId: ch.id, signature: await ownerAcc.signMessage({ message: ch.message }) },
    cookie,
  })
  t.equal(r.status, 201)

  // bound to the signed-in account
  ch = await newCh()
  r = await api(url, '/api/marketplace/keys', {
    body: { challengeId: ch.id, signature: await ownerAcc.signMessage({ message: ch.message }) },
    cookie: otherCookie,
  })
  t.equal(r.status, 403)
  t.match(r.json.error, /another account/)

  // cross-purpose: a signature over a purchase message does not issue a key
  ch = await newCh()
  const unlock = ['svc marketplace', 'Unlock', 'listing: x', `tx: 0x${'11'.repeat(32)}`].join('\n')
  r = await api(url, '/api/marketplace/keys', {
    body: { challengeId: ch.id, signature: await ownerAcc.signMessage({ message: unlock }) },
    cookie,
  })
  t.equal(r.status, 403)
  // cross-purpose: a SIWE nonce is not a challenge id
  const nonce = (await api(url, '/api/auth/nonce')).json.nonce
  r = await api(url, '/api/marketplace/keys', {
    body: { challengeId: nonce, signature: await ownerAcc.signMessage({ message: ch.message }) },
    cookie,
  })
  t.equal(r.status, 404)
  t.match(r.json.error, /unknown challenge/)

  r = await api(url, '/api/marketplace/keys', { body: { challengeId: ch.id, signature: '0x1234' }, cookie })
  t.equal(r.status, 400)
  t.match(r.json.error, /signature/)
  r = await api(url, '/api/marketplace/keys', { body: { challengeId: ch.id }, cookie })
  t.equal(r.status, 400)
  t.match(r.json.error, /signature/)

  // an agent that does not exist
  ch = await newCh(cookie, owner.address, '999')
  r = await api(url, '/api/marketplace/keys', {
    body: { challengeId: ch.id, signature: await ownerAcc.signMessage({ message: ch.message }) },
    cookie,
  })
  t.equal(r.status, 403)
  t.match(r.json.error, /not registered/)
})

t.test('challenge expiry', async (t) => {
  const cookie = await signIn(url, owner.privateKey)
  const ch = (
    await api(url, '/api/marketplace/challenges', {
      body: { kind: 'key', agentId: '0', wallet: owner.address },
      cookie,
    })
  ).json as { id: string; message: string }
  const rec = (await market.ctx.db.challenges.get(ch.id))!
  await market.ctx.db.challenges.put(ch.id, { ...rec, expiresAt: Date.now() - 1 })
  const r = await api(url, '/api/marketplace/keys', {
    body: {
      challengeId: ch.id,
      signature: await privateKeyToAccount(owner.privateKey).signMessage({ message: ch.message }),
    },
    cookie,
  })
  t.equal(r.status, 400)
  t.match(r.json.error, /expired/)
})

t.test('a transferred agent NFT blocks listing and revokes keys at the next key-issue call', async (t) => {
  // A second agent, owned by account 6, so the demo agent stays with its owner for other tests.
  const holder = anvilAccount(6)
  const newOwner = anvilAccount(7)
  const w = walletClientFor(dev.rpcUrl, holder.privateKey)
  const pub = publicClientFor(dev.rpcUrl)
  const agentId = (await registerAgent(w, pub, dev.identityRegistry, 'svc://agents/second')).toString()
  const cookie = await signIn(url, holder.privateKey)
  const k = await issueKey(url, cookie, holder.privateKey, agentId)
  t.equal(k.status, 201, JSON.stringify(k.json))
  const ds = dataset(3, agentId)
  const ok = await postListing(url, k.json.key as string, ds)
  t.equal(ok.status, 201, 'lists while the wallet holds the agent')
  const tx = await w.writeContract({
    address: dev.identityRegistry,
    abi: identityRegistryAbi,
    functionName: 'transferFrom',
    args: [holder.address, newOwner.address, BigInt(agentId)],
  })
  await pub.waitForTransactionReceipt({ hash: tx })
  const blocked = await postListing(url, k.json.key as string, dataset(3, agentId))
  t.equal(blocked.status, 403)
  t.match(blocked.json.error, /no longer holds agent/)
  let keys = (await api(url, '/api/marketplace/keys', { cookie })).json.keys as Record<string, unknown>[]
  t.equal(keys.find((x) => x.id === k.json.id)!.status, 'active', 'not revoked until a key-issue call')
  const again = await issueKey(url, cookie, holder.privateKey, agentId)
  t.equal(again.status, 403, 'the old holder cannot issue a key')
  keys = (await api(url, '/api/marketplace/keys', { cookie })).json.keys as Record<string, unknown>[]
  const old = keys.find((x) => x.id === k.json.id)!
  t.equal(old.status, 'revoked')
  t.match(old.revokedReason, /no longer holds agent/)
  const after = await postListing(url, k.json.key as string, dataset(3, agentId))
  t.equal(after.status, 403)
  t.match(after.json.error, /revoked/)
  const nk = await issueKey(url, await signIn(url, newOwner.privateKey), newOwner.privateKey, agentId)
  t.equal(nk.status, 201, 'the new owner can issue a key')
})

t.test(
  'the new owner’s key call revokes the old owner’s keys of that agent, naming the holder',
  async (t) => {
    // ownerOf reads counted by agent, so the test sees what one call costs.
    const reads = new Map<string, number>()
    const counted = await startMarket(t, dev, undefined, {
      wrapChain: (c) => ({
        ...c,
        ownerOf: (id) => {
          reads.set(id.toString(), (reads.get(id.toString()) ?? 0) + 1)
          return c.ownerOf(id)
        },
      }),
    })
    const holder = anvilAccount(8)
    const newOwner = anvilAccount(9)
    const w = walletClientFor(dev.rpcUrl, holder.privateKey)
    const pub = publicClientFor(dev.rpcUrl)
    const holderCookie = await signIn(counted.url, holder.privateKey)
    const newCookie = await signIn(counted.url, newOwner.privateKey)
    const holderKeys = async () =>
      (await api(counted.url, '/api/marketplace/keys', { cookie: holderCookie })).json.keys as Record<
        string,
        unknown
      >[]
    // The new owner's call revokes whether it issues a key or is refused.
    const cases = [
      { what: 'a key issued to the new owner', signer: newOwner.privateKey, status: 201 },
      { what: 'a refused call (signed by the old holder)', signer: holder.privateKey, status: 403 },
    ]
    const ownAgents = new Set<string>()
    for (const c of cases) {
      const agentId = (
        await registerAgent(w, pub, dev.identityRegistry, `svc://agents/${c.status}`)
      ).toString()
      // Two keys of one agent: the call still reads its owner once.
      const k1 = await issueKey(counted.url, holderCookie, holder.privateKey, agentId)
      const k2 = await issueKey(counted.url, holderCookie, holder.privateKey, agentId)
      t.equal(k1.status, 201, JSON.stringify(k1.json))
      t.equal(k2.status, 201, JSON.stringify(k2.json))
      const tx = await w.writeContract({
        address: dev.identityRegistry,
        abi: identityRegistryAbi,
        functionName: 'transferFrom',
        args: [holder.address, newOwner.address, BigInt(agentId)],
      })
      await pub.waitForTransactionReceipt({ hash: tx })
      const before = await holderKeys()
      t.same(
        [k1, k2].map((k) => before.find((x) => x.id === k.json.id)!.status),
        ['active', 'active'],
        `${c.what}: the old keys are active until a key call names the agent`,
      )

      const ch = await api(counted.url, '/api/marketplace/challenges', {
        body: { kind: 'key', agentId, wallet: newOwner.address },
        cookie: newCookie,
      })
      t.equal(ch.status, 201)
      const signature = await privateKeyToAccount(c.signer).signMessage({
        message: ch.json.message as string,
      })
      reads.clear()
      const r = await api(counted.url, '/api/marketplace/keys', {
        body: { challengeId: ch.json.id, signature },
        cookie: newCookie,
      })
      t.equal(r.status, c.status, `${c.what}: ${JSON.stringify(r.json)}`)
      // One read per agent involved: the one the call names and those of the caller's own keys
      // (the new owner holds a key of the first case's agent by the second case).
      t.same(
        Object.fromEntries(reads),
        Object.fromEntries([...ownAgents, agentId].map((a) => [a, 1])),
        `${c.what}: one ownerOf read per agent involved`,
      )

      const after = await holderKeys()
      for (const k of [k1, k2]) {
        const old = after.find((x) => x.id === k.json.id)!
        t.equal(old.status, 'revoked', `${c.what}: the old owner's key is revoked`)
        t.equal(
          old.revokedReason,
          `wallet ${holder.address.toLowerCase()} no longer holds agent ${agentId}: it is held by ${newOwner.address.toLowerCase()}`,
        )
        t.match(old.revokedAt, /^\d{4}-\d\d-\d\dT/)
      }
      const listed = await postListing(counted.url, k1.json.key as string, dataset(3, agentId))
      t.equal(listed.status, 403, `${c.what}: the revoked key cannot list`)
      t.match(listed.json.error, /revoked: wallet .* no longer holds agent .*: it is held by/)
      if (c.status === 201) {
        ownAgents.add(agentId)
        const mine = (await api(counted.url, '/api/marketplace/keys', { cookie: newCookie })).json
          .keys as Record<string, unknown>[]
        t.equal(mine.find((x) => x.id === r.json.id)!.status, 'active', "the new owner's key is active")
      }
    }
  },
)

t.test('a key call naming an agent whose keys are all current revokes nothing', async (t) => {
  const cookie = await signIn(url, owner.privateKey)
  const first = await issueKey(url, cookie, owner.privateKey, dev.agentId)
  t.equal(first.status, 201)
  // A second call naming the same agent, by its holder: the first key stays active.
  const second = await issueKey(url, cookie, owner.privateKey, dev.agentId)
  t.equal(second.status, 201)
  const keys = (await api(url, '/api/marketplace/keys', { cookie })).json.keys as Record<string, unknown>[]
  t.equal(keys.find((x) => x.id === first.json.id)!.status, 'active')
  t.equal(keys.find((x) => x.id === second.json.id)!.status, 'active')
})
