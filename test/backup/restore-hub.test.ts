// A backup of a running hub taken in the middle of a burst of events, restored into a new home
// and started: every run completed before the backup began, both approvals still waiting, and
// every attested line is there; the restored hub is the same device; and the chain sync, run by
// the first hub and then by the restored one, requests no line twice (a real anvil chain and
// attestor). Also: restore refuses a home with data and a running hub, naming why.
import t from 'tap'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { parseAbiItem } from 'viem'
import { publicClientFor } from '../../chain/clients.ts'
import { svcPaths } from '../../hub/paths.ts'
import { svcCli } from '../helpers/cli.ts'
import { startDevAttestor } from '../helpers/dev-attestor.ts'
import { type HubChild, startHubChild } from '../helpers/hub-process.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

/** The first quarter before the backup, then events until it ends, then up to BURST. */
const BURST = 400

const SOPS: Record<string, [string, string]> = {
  sale: [
    'execution_mode = "auto"\nmax_concurrent = 1000\n[[triggers]]\ntype = "mqtt"\ntopic = "sale/+"\n',
    '1. **Attest**\n   - call: {"tool":"chain_attest","args":{"action":"vend","request_uri":"svc://shop/sale","params":{"n":"{{trigger.n}}"}}}\n   - terminal: true\n',
  ],
  gated: [
    'execution_mode = "auto"\n[[triggers]]\ntype = "mqtt"\ntopic = "gate/+"\n',
    '1. **Go**\n   - kind: checkpoint\n   - prompt: go on?\n   - call: {"tool":"mqtt_publish","args":{"topic":"gated/done","payload":"{{trigger}}","qos":1}}\n   - terminal: true\n',
  ],
}

async function writeHome(home: string, toml: string): Promise<void> {
  for (const [name, [settings, steps]] of Object.entries(SOPS)) {
    await mkdir(join(home, 'sops', name), { recursive: true })
    await writeFile(
      join(home, 'sops', name, 'SOP.toml'),
      `[sop]\nname = "${name}"\ndescription = "d"\nagent = "none"\n${settings}`,
    )
    await writeFile(join(home, 'sops', name, 'SOP.md'), `# ${name}\n\n## Steps\n\n${steps}`)
  }
  await writeFile(join(home, 'hub.toml'), toml)
}

/** The running hub's local API, with its token, as the CLI reaches it. */
async function api(home: string, method: string, path: string, body?: object): Promise<unknown> {
  const paths = svcPaths({ SVC_HOME: home })
  const { url } = JSON.parse(await readFile(paths.apiInfo, 'utf8')) as { url: string }
  const token = (await readFile(paths.apiToken, 'utf8')).trim()
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return res.json()
}

type Run = { id: string; sop: string; state: string }
async function runs(home: string): Promise<Run[]> {
  const out: Run[] = []
  let cursor: string | undefined
  do {
    const page = (await api(home, 'GET', `/sop/runs?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)) as {
      runs: Run[]
      next?: string | null
    }
    out.push(...page.runs)
    cursor = page.next ?? undefined
  } while (cursor)
  return out
}

type Counts = { total: number; pending: number; sending: number; requested: number; attested: number }
const attestStatus = async (env: NodeJS.ProcessEnv, home: string): Promise<Counts> => {
  const r = await svcCli(env, home)('attest', 'status', '--json')
  if (r.code !== 0) throw new Error(`svc attest status: ${r.err}`)
  return JSON.parse(r.out) as Counts
}
const settled = (c: Counts) => c.pending + c.sending + c.requested === 0

t.test(
  'backup during a burst, restore into a new home, start: everything there, nothing sent twice',
  async (t) => {
    const { chain: dev, attestor } = await startDevAttestor(t)
    const port = await freePort()
    const toml = `[hub]\nlog_level = "info"\n[broker]\nport = ${port}\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nenabled = false\n[chain]\nrpc_url = "${dev.rpcUrl}"\nvalidation_registry = "${dev.validationRegistry}"\nagent_id = ${dev.agentId}\nattestor_address = "${dev.info.attestorAddress}"\nattestor_url = "${attestor.url}"\n`
    const homeA = await tempDir(t)
    await writeHome(homeA, toml)
    await writeFile(join(homeA, 'device.key'), `${dev.accounts.device.privateKey}\n`, { mode: 0o600 })
    const envA = { ...process.env, SVC_HOME: homeA }
    const hubA: HubChild = await startHubChild(t, homeA)

    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0 })
    t.teardown(() => client.endAsync())
    for (const g of [1, 2]) await client.publishAsync(`gate/${g}`, JSON.stringify({ g }), { qos: 1 })
    await waitFor(
      async () => (await runs(homeA)).filter((r) => r.state === 'waiting_approval').length === 2,
      'two runs at the gate',
    )

    // The burst: a quarter first, done; then the backup, with events going on one after another
    // beside it until it ends; then the rest.
    const sell = (n: number) => client.publishAsync(`sale/${n}`, JSON.stringify({ n }), { qos: 1 })
    await Promise.all(Array.from({ length: BURST / 4 }, (_, n) => sell(n)))
    const sales = async () => (await runs(homeA)).filter((r) => r.sop === 'sale' && r.state === 'completed')
    await waitFor(async () => (await sales()).length === BURST / 4, 'the first quarter done', {
      timeoutMs: 60_000,
    })
    const before = await runs(homeA)
    const completedBefore = before.filter((r) => r.state === 'completed').map((r) => r.id)
    const linesBefore = (await attestStatus(envA, homeA)).total
    const out = join(homeA, '..', `backup-${process.pid}.tar.gz`)
    let backingUp = true
    const backup = svcCli(envA, homeA)('hub', 'backup', '--out', out).finally(() => (backingUp = false))
    let n = BURST / 4
    while (backingUp && n < 20 * BURST) await sell(n++)
    const during = n - BURST / 4
    const taken = await backup
    await Promise.all(Array.from({ length: Math.max(0, BURST - n) }, (_, i) => sell(n + i)))
    const total = Math.max(n, BURST)
    t.equal(taken.code, 0, `svc hub backup: ${taken.err}`)
    t.match(taken.out, /wrote .*backup-\d+\.tar\.gz \([\d.]+ MB, checked\), from the running hub/)
    t.match(taken.out, /keep it private/)
    t.equal((await stat(out)).mode & 0o777, 0o600, 'the archive is mode 0600')

    // The first hub finishes its burst and syncs every line, then stops.
    await waitFor(
      async () =>
        (await runs(homeA)).filter((r) => r.sop === 'sale' && r.state === 'completed').length === total,
      'the burst done',
      { timeoutMs: 120_000 },
    )
    await waitFor(
      async () => {
        const c = await attestStatus(envA, homeA)
        return c.total === total && settled(c)
      },
      'the first hub synced every line',
      { timeoutMs: 180_000, intervalMs: 250 },
    )
    const busy = await svcCli(envA, homeA)('hub', 'restore', out)
    t.equal(busy.code, 1)
    t.match(busy.err, /a hub is running on .* \(pid \d+\); restore only into a home no hub uses/)
    await hubA.stop()

    // With no hub running, the command reads the stores itself.
    const offline = join(homeA, '..', `offline-${process.pid}.tar.gz`)
    const cold = await svcCli(envA, homeA)('hub', 'backup', '--out', offline, '--no-history')
    t.equal(cold.code, 0, `svc hub backup with no hub: ${cold.err}`)
    t.match(cold.out, /from the stores in .* \(no hub running\)/)
    t.match(cold.out, /finished runs left out \(--no-history\)/)
    const again = await svcCli(envA, homeA)('hub', 'backup', '--out', offline)
    t.equal(again.code, 1)
    t.match(again.err, /exists; a backup never overwrites a file/)

    // Restore refuses the first home (it has a hub) and restores into an empty one.
    const refused = await svcCli(envA, homeA)('hub', 'restore', out)
    t.equal(refused.code, 1)
    t.match(
      refused.err,
      /already has a hub \(hub\.toml, device\.key, data\/\); restore only into an empty home/,
    )
    const homeB = await tempDir(t)
    const envB = { ...process.env, SVC_HOME: homeB }
    const restored = await svcCli(envB, homeB)('hub', 'restore', out)
    t.equal(restored.code, 0, `svc hub restore: ${restored.err}`)
    t.match(restored.out, /restored .* into /)
    t.match(restored.out, /start it with: svc hub/)
    t.equal(
      await readFile(join(homeB, 'device.key'), 'utf8'),
      await readFile(join(homeA, 'device.key'), 'utf8'),
      'the same device key',
    )
    t.equal((await stat(join(homeB, 'device.key'))).mode & 0o777, 0o600, 'still 0600')

    const hubB = await startHubChild(t, homeB)
    const after = await runs(homeB)
    const ids = new Set(after.map((r) => r.id))
    t.ok(
      completedBefore.every((id) => ids.has(id)),
      `all ${completedBefore.length} runs completed before the backup began are there`,
    )
    t.ok(
      after.length >= before.length,
      `${after.length} runs restored, at least the ${before.length} there before the backup`,
    )
    t.comment(
      `${during} events were sent while the backup was taken; the restored hub has ${after.length} runs`,
    )
    const gated = after.filter((r) => r.sop === 'gated')
    t.same(
      gated.map((r) => r.state),
      ['waiting_approval', 'waiting_approval'],
      'both approvals still waiting',
    )
    await api(homeB, 'POST', `/sop/runs/${gated[0]!.id}/approve`, { by: 'test' })
    await waitFor(
      async () => (await runs(homeB)).find((r) => r.id === gated[0]!.id)?.state === 'completed',
      'the approved run completes',
    )

    const linesB = await attestStatus(envB, homeB)
    t.ok(
      linesB.total >= linesBefore,
      `${linesB.total} attested lines restored, at least the ${linesBefore} there before`,
    )
    await waitFor(async () => settled(await attestStatus(envB, homeB)), 'the restored hub synced', {
      timeoutMs: 180_000,
      intervalMs: 250,
    })
    await hubB.stop()

    const pub = publicClientFor(dev.rpcUrl)
    const requests = await pub.getLogs({
      address: dev.validationRegistry,
      event: parseAbiItem(
        'event ValidationRequest(address indexed validatorAddress, uint256 indexed agentId, string requestURI, bytes32 indexed requestHash)',
      ),
      fromBlock: 0n,
    })
    const hashes = requests.map((l) => l.args.requestHash)
    t.equal(new Set(hashes).size, hashes.length, 'no line requested twice')
    t.equal(hashes.length, total, 'every line requested once')
  },
)
