// The owner's key: Web3 Secret Storage v3 keystores (the spec's own scrypt and pbkdf2 examples,
// and what encryptKeystore writes) and 0600 key files; every refusal names the file and the fault.
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { decryptKeystore, encryptKeystore, readKeyFile, readKeystoreFile } from '../../chain/keystore.ts'
import { tempDir } from '../helpers/tmp.ts'

// The two test vectors of the Web3 Secret Storage Definition (password "testpassword").
const KEY = '0x7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d'
const SCRYPT = {
  crypto: {
    cipher: 'aes-128-ctr',
    cipherparams: { iv: '83dbcc02d8ccb40e466191a123791e0e' },
    ciphertext: 'd172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c',
    kdf: 'scrypt',
    kdfparams: {
      dklen: 32,
      n: 262144,
      r: 1,
      p: 8,
      salt: 'ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19',
    },
    mac: '2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097',
  },
  id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
  version: 3,
}
const PBKDF2 = {
  crypto: {
    cipher: 'aes-128-ctr',
    cipherparams: { iv: '6087dab2f9fdbbfaddc31a909735c1e6' },
    ciphertext: '5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46',
    kdf: 'pbkdf2',
    kdfparams: {
      c: 262144,
      dklen: 32,
      prf: 'hmac-sha256',
      salt: 'ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd',
    },
    mac: '517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2',
  },
  id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
  version: 3,
}

t.test('the spec test vectors decrypt (scrypt with r = 1, which OpenSSL refuses, and pbkdf2)', async (t) => {
  t.same(await decryptKeystore(JSON.stringify(SCRYPT), 'testpassword'), { ok: true, privateKey: KEY })
  t.same(await decryptKeystore(JSON.stringify(PBKDF2), 'testpassword'), { ok: true, privateKey: KEY })
  // Older tools wrote "Crypto".
  const { crypto, ...rest } = PBKDF2
  t.same(await decryptKeystore(JSON.stringify({ ...rest, Crypto: crypto }), 'testpassword'), {
    ok: true,
    privateKey: KEY,
  })
})

t.test('a written keystore opens with its passphrase only', async (t) => {
  const json = await encryptKeystore(KEY, 'pässwörd', 2 ** 12)
  t.match(JSON.parse(json), {
    version: 3,
    address: '008aeeda4d805471df9b2a5b0f38a0c3bcba786b',
    crypto: { kdf: 'scrypt', cipher: 'aes-128-ctr' },
  })
  t.same(await decryptKeystore(json, 'pässwörd'), { ok: true, privateKey: KEY })
  t.match(await decryptKeystore(json, 'password'), {
    ok: false,
    code: 'UNAUTHORIZED',
    error: 'keystore: wrong passphrase (the MAC does not match)',
  })
})

t.test('malformed keystores: one reason each', async (t) => {
  type Ks = {
    version: number
    address: string
    crypto: { cipher: string; kdf: string; kdfparams: { n: number }; cipherparams: { iv: string } }
  }
  const base = JSON.parse(await encryptKeystore(KEY, 'pw', 2 ** 10)) as Ks
  const tweak = (f: (o: Ks) => void) => {
    const o = structuredClone(base)
    f(o)
    return JSON.stringify(o)
  }
  const cases: [string, string, RegExp][] = [
    ['not json', '{', /not JSON/],
    ['version', tweak((o) => void (o.version = 1)), /version must be 3/],
    ['cipher', tweak((o) => void (o.crypto.cipher = 'aes-128-cbc')), /only aes-128-ctr/],
    ['kdf', tweak((o) => void (o.crypto.kdf = 'argon2')), /only scrypt or pbkdf2/],
    ['huge n', tweak((o) => void (o.crypto.kdfparams.n = 2 ** 30)), /power of two up to/],
    ['iv', tweak((o) => void (o.crypto.cipherparams.iv = 'zz')), /iv must be 16 bytes/],
    [
      'address',
      tweak((o) => void (o.address = '00'.repeat(20))),
      /the key is for 0x008AeEda.*but the file says/,
    ],
  ]
  for (const [name, json, want] of cases)
    t.match(await decryptKeystore(json, 'pw'), { ok: false, code: 'BAD_CONFIG', error: want }, name)
})

t.test('key files: 0600 and 32 bytes of hex, or refused', async (t) => {
  const dir = await tempDir(t)
  const f = join(dir, 'owner.key')
  await writeFile(f, `${KEY.slice(2)}\n`, { mode: 0o600 })
  t.same(await readKeyFile(f), { ok: true, privateKey: KEY })
  await chmod(f, 0o640)
  t.match(await readKeyFile(f), {
    ok: false,
    code: 'BAD_CONFIG',
    error: `key file ${f}: readable by others (mode 640); chmod 600 ${f}`,
  })
  await writeFile(join(dir, 'short.key'), '0x1234', { mode: 0o600 })
  t.match(await readKeyFile(join(dir, 'short.key')), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /expected 32 bytes of hex/,
  })
  t.match(await readKeyFile(join(dir, 'missing.key')), { ok: false, code: 'NOT_FOUND', error: /ENOENT/ })
  t.match(await readKeystoreFile(join(dir, 'missing.json'), 'pw'), {
    ok: false,
    code: 'NOT_FOUND',
    error: /keystore .*missing\.json: ENOENT/,
  })
})
