// Two market processes (`svc market`, each its own data dir and port) on one PostgreSQL database
// and one blocks folder, as a deployment behind a load balancer runs them: a listing posted
// through one is browsed, verified, bought and downloaded through the other; a challenge consumed
// on one is refused on the other; 100 concurrent purchases with one transaction hash, spread
// over both, give exactly one 200.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { type Hex, parseEther } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { chainFilePath } from '../../chain/chain-file.ts'
import { writeChainFile } from '../../hub/files/chain-file.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { freePort } from '../helpers/ports.ts'
import { postgresMissing } from '../helpers/postgres.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { writeRows } from './chain-rows.ts'
import { api, dataset, postListing, signIn } from './market-helpers.ts'
import { testStoreUrl } from './store-engine.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const why = postgresMissing()

t.test('two market processes on one PostgreSQL and one blocks folder', { skip: why ?? false }, async (t) => {
  const dev = await startDevChain()
  t.teardown(() => dev.stop())
  const storeUrl = (await testStoreUrl('postgres'))!
  const home = await tempDir(t, 'svc-two-')
  await writeChainFile(chainFilePath(home), dev.info)
  const blocks = join(home, 'shared-blocks')
  await mkdir(blocks)

  async function startInstance(name: string): Promise<{ url: string; proc: ChildProcess }> {
    const port = await freePort()
    const toml = join(home, `${name}.toml`)
    await writeFile(
      toml,
      [
        `dataDir = "${join(home, name)}"`,
        'samples = false',
        '[store]',
        `blocksDir = "${blocks}"`,
        '[verify]',
        'intervalSeconds = 0',
        ...['purchase', 'keys', 'challenges', 'signIn', 'verify'].flatMap((k) => [
          `[rateLimit.${k}]`,
          'max = 100000',
        ]),
        '',
      ].join('\n'),
    )
    // The database URL comes from the environment, as a deployment keeps its password out of files.
    const proc = spawn(
      process.execPath,
      [join(root, 'bin/svc.js'), 'market', '--config', toml, '--port', String(port)],
      {
        env: { ...process.env, SVC_HOME: home, SVC_MARKET_STORE: storeUrl },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    proc.stdout!.on('data', (d: Buffer) => (out += d.toString()))
    proc.stderr!.on('data', (d: Buffer) => (out += d.toString()))
    t.teardown(async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        const done = new Promise((r) => proc.once('exit', r))
        proc.kill('SIGTERM')
        await done
      }
    })
    await waitFor(
      () => {
        if (proc.exitCode !== null) throw new Error(`market ${name} exited: ${out}`)
        return out.includes('market listening on')
      },
      `market ${name} to listen`,
      { timeoutMs: 60_000, intervalMs: 50 },
    )
    t.notMatch(out, storeUrl, `${name}: the database URL is not printed`)
    return { url: `http://127.0.0.1:${port}`, proc }
  }

  const [a, b] = await Promise.all([startInstance('a'), startInstance('b')])
  const { owner, buyer, payout } = dev.accounts
  const ownerAcc = privateKeyToAccount(owner.privateKey)

  // Signed in on A; the session works on B (sessions and the cookie key are in the database).
  const ownerCookie = await signIn(a.url, owner.privateKey)
  const who = await api(b.url, '/api/auth/session', { cookie: ownerCookie })
  t.equal(who.status, 200, 'a session made on A is valid on B')

  // A challenge asked for on A, consumed on B, is refused when replayed on A.
  const ch = await api(a.url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: dev.agentId, wallet: ownerAcc.address },
    cookie: ownerCookie,
  })
  t.equal(ch.status, 201)
  const signature = await ownerAcc.signMessage({ message: ch.json.message as string })
  const issued = await api(b.url, '/api/marketplace/keys', {
    body: { challengeId: ch.json.id, signature },
    cookie: ownerCookie,
  })
  t.equal(issued.status, 201, 'consumed on B')
  const replay = await api(a.url, '/api/marketplace/keys', {
    body: { challengeId: ch.json.id, signature },
    cookie: ownerCookie,
  })
  t.equal(replay.status, 409, 'refused on A')
  t.match(replay.json.error, /already used/)
  const key = issued.json.key as string

  // Posted through A, with rows attested on chain.
  const ds = dataset(6, dev.agentId)
  await writeRows(
    dev,
    ds.manifest.rows.map((r) => ({ requestHash: r.requestHash, paramsHash: r.paramsHash })),
  )
  const posted = await postListing(a.url, key, ds, {
    fields: {
      title: 'Two instance gearbox readings',
      summary: 'posted on one instance, sold on the other',
      description: 'A dataset for the two-instance test.',
      machineType: 'arm',
      license: 'commercial',
      priceNative: '0.05',
    },
  })
  t.equal(posted.status, 201, JSON.stringify(posted.json))
  const slug = posted.json.slug as string

  // Browsed, searched and verified through B.
  const list = await api(b.url, '/api/marketplace/listings?q=gearbox')
  t.same(
    (list.json.listings as { slug: string }[]).map((l) => l.slug),
    [slug],
    'B finds it by search',
  )
  const page = await api(b.url, '/marketplace')
  t.match(page.text, 'Two instance gearbox readings', "B's browse page shows it")
  const verified = await api(b.url, `/api/marketplace/listings/${slug}/verify`, { method: 'POST' })
  t.equal(verified.status, 200)
  t.equal(verified.json.verified, true, 'B verifies it (blocks written by A, read by B)')

  // One payment, 100 concurrent purchases spread over A and B: exactly one 200.
  const pub = publicClientFor(dev.rpcUrl)
  const tx = await walletClientFor(dev.rpcUrl, buyer.privateKey).sendTransaction({
    to: payout.address,
    value: parseEther('0.05'),
  })
  await pub.waitForTransactionReceipt({ hash: tx })
  const buyerAcc = privateKeyToAccount(buyer.privateKey)
  const [cookieA, cookieB] = [await signIn(a.url, buyer.privateKey), await signIn(b.url, buyer.privateKey)]
  const unlock = await buyerAcc.signMessage({
    message: ['svc marketplace', 'Unlock', `listing: ${slug}`, `tx: ${tx}`].join('\n'),
  })
  const results = await Promise.all(
    Array.from({ length: 100 }, (_, i) => {
      const [url, cookie] = i % 2 === 0 ? [a.url, cookieA] : [b.url, cookieB]
      return api(url, `/api/marketplace/listings/${slug}/purchase`, {
        body: { txHash: tx as Hex, signature: unlock },
        cookie,
      }).then((r) => ({ ...r, on: url }))
    }),
  )
  const ok = results.filter((r) => r.status === 200)
  t.equal(ok.length, 1, 'exactly one purchase succeeds')
  t.equal(results.filter((r) => r.status === 409).length, 99, 'the other 99 are told the hash was used')
  t.same(new Set(results.map((r) => r.on)), new Set([a.url, b.url]), 'the requests went to both instances')

  // Downloaded through the instance that did not sell it, with the session of that instance.
  const other = ok[0]!.on === a.url ? b : a
  const cookie = other === a ? cookieA : cookieB
  const access = ok[0]!.json.access as { dataUrl: string; manifestUrl: string }
  const data = await fetch(other.url + access.dataUrl, { headers: { cookie } })
  t.equal(data.status, 200)
  t.equal(await data.text(), ds.data, 'the data file, byte for byte, from the other instance')
  const man = await fetch(other.url + access.manifestUrl, { headers: { cookie } })
  t.same(JSON.parse(await man.text()), ds.manifest)
})
