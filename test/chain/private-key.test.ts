// The one reader of a hex private key (chain/private-key.ts): what it takes, what it refuses,
// and that every refusal names the key and where it came from.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { parsePrivateKey } from '../../chain/private-key.ts'

const KEY = `0x${'4c'.repeat(32)}` as const
const address = privateKeyToAccount(KEY).address
// secp256k1's group order n: a key must be in [1, n-1].
const N = 'fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141'

t.test('takes 64 hex digits, 0x optional, whitespace around ignored', async (t) => {
  const upper = `0x${'4C'.repeat(32)}`
  const cases: [string, string][] = [
    [KEY, KEY],
    [KEY.slice(2), KEY],
    [`${KEY}\n`, KEY],
    [`  ${upper.slice(2)}\r\n`, upper],
  ]
  for (const [text, key] of cases)
    t.same(parsePrivateKey(text, 'key file k'), { ok: true, key, address }, JSON.stringify(text))
})

t.test('refuses what is not a key, naming what and where', async (t) => {
  const cases: [string, string][] = [
    ['', 'expected 32 bytes of hex'],
    ['0x1234', 'expected 32 bytes of hex'],
    [`0x${'4c'.repeat(33)}`, 'expected 32 bytes of hex'],
    [`0x${'zz'.repeat(32)}`, 'expected 32 bytes of hex'],
    [`0x0x${'4c'.repeat(31)}`, 'expected 32 bytes of hex'],
    [`0x${'00'.repeat(32)}`, 'not a valid secp256k1 key'],
    [`0x${N}`, 'not a valid secp256k1 key'],
  ]
  for (const [text, problem] of cases)
    t.same(
      parsePrivateKey(text, '$SVC_ATTESTOR_KEY'),
      { ok: false, code: 'BAD_CONFIG', problem, error: `$SVC_ATTESTOR_KEY: ${problem}` },
      JSON.stringify(text),
    )
})
