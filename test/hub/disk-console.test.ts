// The disk guard as the owner sees it in the console's overview (hub/console/pages/overview.ts):
// a real hub whose reserve is more than the disk has (it refuses from its start) beside one with
// no reserve. The refusal is also what a run started by hand meets.
import t from 'tap'
import { DISK_REFUSING } from '../../hub/disk/errors.ts'
import { ConsoleClient, openEvents, startConsoleHub, triggerRun } from './console-helpers.ts'

const MANUAL_SOP: [string, string] = [
  '[sop]\nname = "echo"\ndescription = "d"\nexecution_mode = "deterministic"\nmax_concurrent = 8\nagent = "a"\n\n[[triggers]]\ntype = "manual"\n',
  '# echo\n\n## Steps\n\n1. **Wait**\n   - call: {"tool":"wait","args":{"ms":1}}\n',
]

async function overview(url: string, link: string): Promise<{ page: string; c: ConsoleClient }> {
  const c = new ConsoleClient(url)
  const r = await c.signInWithLink(link)
  if (r.status !== 200) throw new Error(`sign-in failed: ${r.status}`)
  return { page: await (await c.get('/')).text(), c }
}

t.test('a hub below its reserve: the overview says it refuses, and why; new work is refused', async (t) => {
  // 1 TiB: more than any test machine has free, so the hub refuses from its first reading.
  const { hub, url } = await startConsoleHub(t, {
    toml: '[disk]\nreserve_mb = 1048576\n',
    sops: { echo: MANUAL_SOP },
  })
  const { page, c } = await overview(url, hub.console!.loginLink())
  t.match(page, /<section id="ov-disk" data-live="disk"/, 'a live region on the disk topic')
  t.match(page, /data-disk="refusing"/)
  t.match(page, /Refusing new work since .*: free space on .* is below the reserve/)
  t.match(page, /reserve 1\.0 TiB/)
  await t.rejects(triggerRun(hub, 'echo', {}), { code: DISK_REFUSING }, 'a run started by hand is refused')
  const events = await openEvents(c, 'disk')
  t.teardown(() => events.close())
  t.equal(events.ended(), false, 'the disk topic can be followed')
})

t.test('a hub with room: the overview gives the free space and the reserve', async (t) => {
  const { hub, url } = await startConsoleHub(t, {
    toml: '[disk]\nreserve_mb = 0\n',
    sops: { echo: MANUAL_SOP },
  })
  const { page } = await overview(url, hub.console!.loginLink())
  t.match(page, /data-disk="ok"/)
  t.match(page, /free on <code>[^<]+<\/code> · reserve 0 B/)
  t.ok(await triggerRun(hub, 'echo', {}), 'and takes new work')
})

t.test('hub.toml [disk]: errors name the key', async (t) => {
  const { parseConfig } = await import('../../hub/daemon/config.ts')
  const bad = (text: string) => {
    const r = parseConfig(text, '/etc/svc/hub.toml', {})
    return r.ok ? 'ok' : r.error
  }
  t.match(bad('[disk]\nreserve_mb = -1\n'), /hub\.toml: disk\.reserve_mb: must be >= 0/)
  t.match(bad('[disk]\nreserve_percent = 80\n'), /disk\.reserve_percent: must be <= 50/)
  t.match(
    bad('[disk]\nreserveMb = 1\n'),
    /disk\.reserveMb: unknown field \(hub\.toml keys are snake_case: reserve_mb\)/,
  )
  t.match(bad('[disk]\nreserve_mb = "lots"\n'), /disk\.reserve_mb: must be number/)
  const ok = parseConfig('[disk]\nreserve_mb = 128\nreserve_percent = 1.5\n', null, {})
  t.same(ok.ok && ok.config.disk, { reserveMb: 128, reservePercent: 1.5 })
  const none = parseConfig('', null, {})
  t.same(
    none.ok && none.config.disk,
    { reserveMb: null, reservePercent: null },
    'not set: the default reserve',
  )
})
