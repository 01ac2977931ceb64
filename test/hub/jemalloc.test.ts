// The allocator the systemd unit preloads (hub/service/jemalloc.ts, unit.ts): a library is only
// taken once node has started with it and mapped it. A libjemalloc built for smaller pages than
// the kernel's aborts every program at its first malloc (a Raspberry Pi 5's 16 KiB pages): a
// stand-in that does the same, built here with the C compiler, is refused with its own words.
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { findJemalloc, tryJemalloc } from '../../hub/service/jemalloc.ts'
import {
  GLIBC_MALLOC_ENV,
  JEMALLOC_CONF,
  PI_INSTALL,
  jemallocCandidates,
  mallocEnvironment,
  renderUnit,
} from '../../hub/service/unit.ts'
import { tempDir } from '../helpers/tmp.ts'
import { commandMissing } from '../helpers/command-missing.ts'

const noCc = commandMissing(
  'cc',
  ['--version'],
  'a C compiler (cc) to build a library that aborts as jemalloc does',
)

const installed = jemallocCandidates(process.arch).find((p) => existsSync(p)) ?? null

t.test('where Debian puts libjemalloc2, for the architecture node runs on first', async (t) => {
  t.equal(jemallocCandidates('arm64')[0], '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2', 'a Pi on 64-bit OS')
  t.equal(jemallocCandidates('arm')[0], '/usr/lib/arm-linux-gnueabihf/libjemalloc.so.2', 'a Pi on 32-bit OS')
  t.equal(jemallocCandidates('x64')[0], '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2')
  t.ok(
    jemallocCandidates('mips').every((p) => !p.includes('-linux-gnu')),
    'an architecture without a Debian triplet still looks in the plain folders',
  )
})

t.test('the unit: jemalloc preloaded only when given, glibc settings either way', async (t) => {
  const withIt = renderUnit({ ...PI_INSTALL, jemalloc: '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2' })
  const env = withIt.split('\n').filter((l) => l.startsWith('Environment='))
  t.ok(env.includes('Environment=LD_PRELOAD=/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'))
  t.ok(env.includes(`Environment=MALLOC_CONF=${JEMALLOC_CONF}`))
  for (const [k, v] of Object.entries(GLIBC_MALLOC_ENV)) t.ok(env.includes(`Environment=${k}=${v}`), k)

  const without = renderUnit(PI_INSTALL)
  t.notMatch(without, /LD_PRELOAD|MALLOC_CONF/, 'the shipped unit preloads nothing')
  t.match(
    without,
    /sudo apt install libjemalloc2`, then `svc hub install-service --force`/,
    'and says how to',
  )
  t.same(mallocEnvironment(null), GLIBC_MALLOC_ENV)
})

t.test('a library node cannot start with is refused, with what was said', async (t) => {
  const missing = await tryJemalloc('/nonexistent/libjemalloc.so.2')
  t.match(missing, /did not map it \(.*cannot be preloaded/, "ld.so's words for a missing file")
  t.match(await tryJemalloc('/usr/lib/x86_64-linux-gnu/no-such.so'), /cannot be preloaded/)
})

t.test(
  'a libjemalloc built for smaller pages than the kernel has: refused',
  { skip: noCc ?? false },
  async (t) => {
    const dir = await tempDir(t)
    const src = join(dir, 'abort.c')
    const lib = join(dir, 'libjemalloc.so.2')
    // What jemalloc does at its first call on a kernel with larger pages than it was built for.
    await writeFile(
      src,
      '#include <stdlib.h>\n#include <unistd.h>\n__attribute__((constructor)) static void init(void) {\n  static const char m[] = "<jemalloc>: Unsupported system page size\\n";\n  write(2, m, sizeof m - 1);\n  abort();\n}\n',
    )
    execFileSync('cc', ['-shared', '-fPIC', '-o', lib, src], { stdio: 'pipe' })
    const why = await tryJemalloc(lib)
    t.match(why, /failed \(SIGABRT: <jemalloc>: Unsupported system page size\)/)
  },
)

t.test(
  'the libjemalloc2 of this machine: found, and node maps it',
  {
    skip: installed
      ? false
      : `no libjemalloc.so.2 in ${jemallocCandidates(process.arch).join(', ')} (Debian: libjemalloc2)`,
  },
  async (t) => {
    t.equal(await tryJemalloc(installed!), null)
    t.same(await findJemalloc(), { path: installed })
  },
)
