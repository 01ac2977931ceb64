// The firmware identity in an image's bytes (bridge/flash/identity.ts): found in real Uno builds
// of the companion (the default version and one stamped at build time), in hand-made byte arrays,
// and not found in junk, truncated or malformed markers; and the order of dotted versions.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { buildUno, unoToolsMissing } from '../../boards/firmware/uno-build.ts'
import { compareVersions, imageIdentities, imageIdentity } from '../../bridge/flash/identity.ts'
import { tempDir } from '../helpers/tmp.ts'

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
/** An image: filler bytes, then each part, as flash would hold it. */
function image(...parts: Array<string | Uint8Array>): Uint8Array {
  const chunks = [new Uint8Array(300).fill(0xff), ...parts.map((p) => (typeof p === 'string' ? enc(p) : p))]
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}

t.test('a marker in hand-made bytes', async (t) => {
  t.same(imageIdentity(image('\x0c\x94svc-fw:svc-companion/0.2.0;proto=1\0\x01\x02')), {
    name: 'svc-companion',
    version: '0.2.0',
    proto: 1,
  })
  t.same(imageIdentity(image('svc-fw:x/1;proto=255\0')), { name: 'x', version: '1', proto: 255 })
  t.same(
    imageIdentity(image('svc-fw:my_fw+b.2/10.0.0-rc.1;proto=2\0')),
    { name: 'my_fw+b.2', version: '10.0.0-rc.1', proto: 2 },
    'every allowed character',
  )
  t.same(
    imageIdentity(image('svc-fw:a/1;proto=1\0', new Uint8Array(50), 'svc-fw:a/1;proto=1\0')),
    { name: 'a', version: '1', proto: 1 },
    'the same marker twice (two copies of the string) is still one identity',
  )
  const at0 = enc('svc-fw:a/1;proto=3\0')
  t.same(imageIdentity(at0), { name: 'a', version: '1', proto: 3 }, 'at address 0, nothing else')
  t.same(
    imageIdentity(image('svc-svc-fw:a/1;proto=1\0')),
    { name: 'a', version: '1', proto: 1 },
    'a partial prefix just before the real one',
  )
  const long = `svc-fw:${'n'.repeat(31)}/${'9'.repeat(31)};proto=255\0`
  t.same(imageIdentity(image(long)), { name: 'n'.repeat(31), version: '9'.repeat(31), proto: 255 }, 'longest')
})

t.test('junk, truncated and malformed markers are not an identity', async (t) => {
  const none: Array<[string, Uint8Array]> = [
    ['empty', new Uint8Array(0)],
    ['no marker', image('svc-companion/0.2.0\0')],
    ['prefix only', image('svc-fw:')],
    ['cut off by the end of the image', image('svc-fw:svc-companion/0.2.0;proto=1')],
    ['cut off in the prefix', image('svc-f')],
    ['no protocol', image('svc-fw:svc-companion/0.2.0\0')],
    ['no version', image('svc-fw:svc-companion;proto=1\0')],
    ['empty name', image('svc-fw:/0.2.0;proto=1\0')],
    ['empty version', image('svc-fw:a/;proto=1\0')],
    ['two slashes', image('svc-fw:a/b/1;proto=1\0')],
    ['protocol 0', image('svc-fw:a/1;proto=0\0')],
    ['protocol 256', image('svc-fw:a/1;proto=256\0')],
    ['protocol with a leading zero', image('svc-fw:a/1;proto=01\0')],
    ['protocol of four digits', image('svc-fw:a/1;proto=1000\0')],
    ['negative protocol', image('svc-fw:a/1;proto=-1\0')],
    ['junk after the protocol', image('svc-fw:a/1;proto=1x\0')],
    ['a space in the name', image('svc-fw:a b/1;proto=1\0')],
    ['a quote in the version', image('svc-fw:a/1"2;proto=1\0')],
    ['a high byte in the name', image('svc-fw:caf\xe9/1;proto=1\0')],
    ['a name of 32', image(`svc-fw:${'n'.repeat(32)}/1;proto=1\0`)],
    ['the NUL past the longest body', image(`svc-fw:a/1;proto=1${' '.repeat(80)}\0`)],
    ['upper-case prefix', image('SVC-FW:a/1;proto=1\0')],
  ]
  for (const [what, bytes] of none) {
    t.equal(imageIdentity(bytes), undefined, what)
    t.same(imageIdentities(bytes), [], `${what}: nothing listed`)
  }
  const two = image('svc-fw:a/1;proto=1\0', 'svc-fw:a/2;proto=1\0')
  t.equal(imageIdentity(two), undefined, 'two markers that disagree: no identity')
  t.same(
    imageIdentities(two).map((i) => i.version),
    ['1', '2'],
    'both listed, in order, for an error that names them',
  )
  t.same(
    imageIdentity(image('svc-fw:svc-fw:a/1;proto=1\0')),
    { name: 'a', version: '1', proto: 1 },
    'a prefix inside junk before the real one',
  )
  // An image made only of prefixes with no NUL: the scan stays linear (bounded look-ahead).
  const spam = new Uint8Array(256 * 1024)
  const p = enc('svc-fw:')
  for (let i = 0; i + p.length <= spam.length; i += p.length) spam.set(p, i)
  t.equal(imageIdentity(spam), undefined, '256 KiB of prefixes')
})

t.test('compareVersions orders dotted versions', async (t) => {
  const ordered = [
    '0.1.0',
    '0.1.9',
    '0.2.0-alpha',
    '0.2.0-alpha.1',
    '0.2.0-alpha.beta',
    '0.2.0-beta.2',
    '0.2.0-beta.11',
    '0.2.0-rc.1',
    '0.2.0',
    '0.2.1',
    '0.10.0',
    '1.0.0',
    '9007199254740993.0.0',
    '9007199254740994.0.0',
  ]
  for (let i = 0; i < ordered.length; i++)
    for (let j = 0; j < ordered.length; j++)
      t.equal(
        compareVersions(ordered[i]!, ordered[j]!),
        i < j ? -1 : i > j ? 1 : 0,
        `${ordered[i]} vs ${ordered[j]}`,
      )
  t.equal(compareVersions('1.0', '1.0.0'), 0, 'missing parts are 0')
  t.equal(compareVersions('1', '1.0.1'), -1)
  t.equal(compareVersions('01.2', '1.2'), 0, 'leading zeros are numbers')
  t.equal(compareVersions('1.0.0+build.5', '1.0.0'), 0, 'build metadata ignored')
  for (const bad of ['', 'v1.0', '1..0', '1.0.', 'abc', '1.0-', '1.0.0-rc..1', ' 1.0', '1.x'])
    t.equal(compareVersions(bad, '1.0.0'), undefined, `"${bad}" is not a version`)
  t.equal(compareVersions('1.0.0', 'svc'), undefined)
})

const missing = unoToolsMissing()
if (missing) t.comment(`Uno builds skipped: ${missing}`)

t.test(
  'the identity in real Uno builds, kept through LTO and --gc-sections',
  { skip: missing ? `${missing}: the Uno build needs it` : false },
  async (t) => {
    const dir = await tempDir(t)
    const bytesOf = (hex: string): Uint8Array => {
      // avr-objcopy turns the image into the bytes flash will hold from address 0.
      const bin = `${hex}.bin`
      execFileSync('avr-objcopy', ['-I', 'ihex', '-O', 'binary', hex, bin])
      return new Uint8Array(readFileSync(bin))
    }
    const plain = await buildUno(join(dir, 'plain'))
    if (!plain.ok) throw new Error(plain.error)
    const props = readFileSync(
      join(import.meta.dirname, '../../boards/firmware/svc_companion/library.properties'),
      'utf8',
    )
    const libVersion = /^version=(.+)$/m.exec(props)![1]
    t.same(
      imageIdentity(bytesOf(plain.build.hex)),
      { name: 'svc-companion', version: libVersion, proto: 1 },
      'the default build names the library version and protocol 1',
    )
    t.equal(
      imageIdentities(new Uint8Array(readFileSync(plain.build.elf))).length,
      1,
      'one marker in the ELF too (one copy in flash, however many files include the header)',
    )

    const stamped = await buildUno(join(dir, 'stamped'), {
      defines: ['SVC_FW_VERSION="0.1.9"', 'SVC_PROTO=2'],
    })
    if (!stamped.ok) throw new Error(stamped.error)
    t.same(
      imageIdentity(bytesOf(stamped.build.hex)),
      { name: 'svc-companion', version: '0.1.9', proto: 2 },
      'a build stamps another version (and protocol) with -D',
    )

    const bad = await buildUno(join(dir, 'bad'), { defines: ['SVC_FW_VERSION="0.1;9"'] })
    t.equal(bad.ok, false, 'a version that would break the marker does not build')
    if (!bad.ok) t.match(bad.error, /SVC_FW_VERSION: 1 to 31 of/)
  },
)
