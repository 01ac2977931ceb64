// Commands that read a store while no hub runs (`svc sop runs`, `svc hub backup`) refuse an
// engine store from an older svc, naming the fix, and write nothing: opening it would move it
// into the history log without the copy the hub takes first (hub/stores/README.md, "Format
// versions and upgrades").
import { existsSync } from 'node:fs'
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { inspectEngine } from '../../hub/stores/engine-format.ts'
import { svcCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/tmp.ts'

const V1 = join(import.meta.dirname, '../fixtures/engine-store-v1/store')

t.test('an older engine store is refused by the readers, untouched', async (t) => {
  const home = await tempDir(t, 'svc-readers-')
  const dir = join(home, 'data', 'engine')
  await cp(V1, dir, { recursive: true })
  const svc = svcCli({ ...process.env, SVC_HOME: home }, home)
  for (const argv of [
    ['sop', 'runs'],
    ['hub', 'backup', '--out', join(home, 'b.tar.gz')],
  ]) {
    const r = await svc(...argv)
    t.equal(r.code, 1, `svc ${argv.join(' ')} fails`)
    t.match(
      r.err,
      /the engine store is format 1, from an older svc; start the hub once \(svc hub\) to upgrade it, which copies it beside itself first/,
      `svc ${argv.slice(0, 2).join(' ')} names the fix`,
    )
  }
  t.notOk(existsSync(join(dir, 'history')), 'no history log was made')
  t.notOk(existsSync(join(home, 'b.tar.gz')), 'no archive was written')
  // LevelDB may fold its own log into a table on any open; what the store holds is unchanged.
  t.match(await inspectEngine(dir), { fresh: false, format: 1 }, 'still format 1')
})
