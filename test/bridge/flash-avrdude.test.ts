// runAvrdude's edges that need no board (bridge/flash/avrdude.ts): an avrdude that is not there is
// named with its Debian package, an image is checked before anything runs, and a reset command's
// failure says which command and how. The sessions with a board are test/boards/bootloader.test.ts.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { avrdudeMissing, runAvrdude, runResetCommand } from '../../bridge/flash/avrdude.ts'
import { toIntelHex } from '../../bridge/flash/intel-hex.ts'
import { FLASH_PROFILES } from '../../bridge/flash/profile.ts'
import { tempDir } from '../helpers/tmp.ts'

const uno = FLASH_PROFILES.uno!

t.test('an avrdude that is not there names the package', async (t) => {
  t.equal(
    avrdudeMissing('/nonexistent/avrdude'),
    '/nonexistent/avrdude is not installed (apt-get install avrdude)',
  )
  t.match(avrdudeMissing('/bin/true'), /^\/bin\/true does not answer -\? as avrdude does$/)
  const r = await runAvrdude({
    avrdude: '/nonexistent/avrdude',
    port: '/dev/null',
    profile: uno,
    ops: [{ op: 'read', path: '/tmp/never.hex' }],
  })
  t.match(r, {
    ok: false,
    code: 'UNAVAILABLE',
    phase: 'connecting',
    error: /cannot run \/nonexistent\/avrdude: spawn \/nonexistent\/avrdude ENOENT/,
  })
})

t.test('images are checked before avrdude runs', async (t) => {
  const dir = await tempDir(t)
  // An avrdude that would fail loudly if it were run at all.
  const o = { avrdude: '/nonexistent/avrdude', port: '/dev/null', profile: uno }
  t.match(await runAvrdude({ ...o, ops: [] }), {
    ok: false,
    code: 'BAD_INPUT',
    phase: 'checking',
    error: 'nothing to do: no read or write',
  })
  t.match(await runAvrdude({ ...o, ops: [{ op: 'write', path: join(dir, 'none.hex') }] }), {
    ok: false,
    code: 'NOT_FOUND',
    phase: 'checking',
    error: /^cannot read the image .*none\.hex: ENOENT/,
  })
  const odd = join(dir, 'odd.hex')
  await writeFile(odd, ':020000000102FB\n:02000000010\n')
  t.match(await runAvrdude({ ...o, ops: [{ op: 'write', path: odd }] }), {
    ok: false,
    code: 'BAD_INPUT',
    phase: 'checking',
    error: `${odd} line 2: not an Intel HEX record (":02000000010")`,
  })
  const big = join(dir, 'big.hex')
  await writeFile(big, toIntelHex(new Uint8Array(40_000)))
  t.match(await runAvrdude({ ...o, ops: [{ op: 'write', path: big }] }), {
    ok: false,
    code: 'TOO_LARGE',
    phase: 'checking',
    error:
      /^.*big\.hex line 2017: data at 0x7e00-0x7e0f, past the end \(0x7dff\): the board takes at most 32256 bytes$/,
  })
})

t.test('a reset command that fails says which and how', async (t) => {
  t.same(await runResetCommand(['true']), { ok: true })
  t.same(await runResetCommand(['sh', '-c', 'echo no GPIO here >&2; exit 3']), {
    ok: false,
    code: 'UPSTREAM_FAILED',
    error: 'reset command `sh -c echo no GPIO here >&2; exit 3` exited with 3: no GPIO here',
  })
  t.match(await runResetCommand(['/nonexistent/reset']), {
    ok: false,
    code: 'UNAVAILABLE',
    error: /^reset command `\/nonexistent\/reset`: spawn \/nonexistent\/reset ENOENT/,
  })
  const ac = new AbortController()
  const slow = runResetCommand(['sleep', '30'], ac.signal)
  ac.abort()
  t.match(
    await slow,
    { ok: false, code: 'CANCELLED', error: /^reset command `sleep 30`: / },
    'aborting stops it',
  )
})
