// The session cookie's key on a market whose store holds no shared secret (LevelDB): made once
// into <data>/cookie.secret, 0600, through the atomic writer, and kept across restarts, so a
// restart does not sign everyone out; a file too short to be a key is replaced.
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startDevChain } from '../../chain/dev.ts'
import { tempDir } from '../helpers/tmp.ts'
import { signIn, startMarket } from './market-helpers.ts'
import { testEngine } from './store-engine.ts'

const why =
  testEngine() === 'postgres'
    ? 'this store keeps the key in the database (sharedSecret), not in a file'
    : false
if (why) t.comment(`cookie secret file skipped: ${why}`)

t.test('made once, 0600, and kept across a restart', { skip: why }, async (t) => {
  const dev = await startDevChain()
  t.teardown(() => dev.stop())
  const data = join(await tempDir(t, 'svc-cookie-'), 'data')
  const file = join(data, 'cookie.secret')
  const at = (c: { dataDir: string }) => {
    c.dataDir = data
  }

  const first = await startMarket(t, dev, at)
  const session = await signIn(first.url, dev.accounts.owner.privateKey)
  const made = readFileSync(file, 'utf8').trim()
  t.ok(made.length >= 32, 'a key of at least 32 characters')
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by the market alone')
  await first.market.close()

  const again = await startMarket(t, dev, at)
  t.equal(readFileSync(file, 'utf8').trim(), made, 'the same key after a restart')
  const me = await fetch(`${again.url}/api/auth/session`, { headers: { cookie: session } })
  t.equal(me.status, 200, 'a session cookie from before the restart still signs in')
  await again.market.close()

  writeFileSync(file, 'short\n', { mode: 0o600 })
  await startMarket(t, dev, at)
  const replaced = readFileSync(file, 'utf8').trim()
  t.ok(replaced.length >= 32 && replaced !== made, 'a file too short to be a key is replaced')
})
