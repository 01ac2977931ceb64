// A real hub with its web console for the console tests (server and Chromium): embedded broker
// on a free port, simulated boards, a SOP dir of the test's choosing, the console on 127.0.0.1:0;
// and an HTTP client that keeps the console's cookie as a browser would.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseConfig } from '../../hub/daemon/config.ts'
import { type RunningHub, startHub } from '../../hub/daemon/hub.ts'
import type { HubParts } from '../../hub/daemon/parts.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { type Log, silentLog } from '../../hub/log.ts'
import { createSimulatingBridge } from '../../boards/simulator/bridge.ts'
import { tempDir, type Teardown } from '../helpers/tmp.ts'

export interface ConsoleHub {
  hub: RunningHub
  home: string
  url: string
  env: NodeJS.ProcessEnv
  bridge: () => ReturnType<typeof createSimulatingBridge> | undefined
}

export interface ConsoleHubOptions {
  /** Extra hub.toml text (sections after the defaults). */
  toml?: string
  /** SOPs as name → [SOP.toml, SOP.md]. */
  sops?: Record<string, [string, string]>
  /** Simulated boards (quiet: they send nothing by themselves). */
  boards?: string[]
  /** The boards' heartbeat (0 = off): with one, a muted board goes offline. */
  heartbeatMs?: number
  home?: string
  /** More parts for the hub, e.g. real ones picked from realParts (the local API, attestation). */
  parts?: (real: HubParts) => Partial<HubParts>
  /** The hub's logger (the console logs through it); default silent. */
  log?: Log
}

/** A SOP with a manual trigger whose step 2 is an operator checkpoint (a run waits there). */
export const APPROVAL_SOP: [string, string] = [
  '[sop]\nname = "dispense"\ndescription = "Dispense once an operator says yes"\nexecution_mode = "deterministic"\nmax_concurrent = 8\nagent = "a"\n\n[[triggers]]\ntype = "manual"\n',
  '# dispense\n\n## Steps\n\n1. **Check the slot**\n   - call: {"tool":"wait","args":{"ms":1}}\n2. **Confirm with the operator**\n   - kind: checkpoint\n   - prompt: Coin received; dispense the item from the slot?\n3. **Dispense**\n   - call: {"tool":"wait","args":{"ms":1}}\n',
]

/** Starts a run of `sop` by hand with `payload`; resolves with its id once admitted. */
export async function triggerRun(hub: RunningHub, sop: string, payload: unknown): Promise<string> {
  const d = await hub.engine.trigger(sop, {
    type: 'manual',
    source: 'test',
    payload: payload as never,
    at: Date.now(),
  })
  const id = (d as { runId?: string }).runId
  if (!id) throw new Error(`not admitted: ${JSON.stringify(d)}`)
  return id
}

export async function startConsoleHub(t: Teardown, o: ConsoleHubOptions = {}): Promise<ConsoleHub> {
  const home = o.home ?? (await tempDir(t))
  const sopsDir = join(home, 'sops')
  await mkdir(sopsDir, { recursive: true })
  for (const [name, [toml, md]] of Object.entries(o.sops ?? {})) {
    await mkdir(join(sopsDir, name), { recursive: true })
    await writeFile(join(sopsDir, name, 'SOP.toml'), toml)
    await writeFile(join(sopsDir, name, 'SOP.md'), md)
  }
  const boards = (o.boards ?? [])
    .map(
      (b) =>
        `[[boards]]\nname = "${b}"\nport = "/dev/svc-sim-${b}"\nsimulate = true\nheartbeat_ms = ${o.heartbeatMs ?? 0}\n`,
    )
    .join('')
  const env = { ...process.env, SVC_HOME: home }
  const cfg = parseConfig(
    `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n${o.toml ?? '[console]\nport = 0\n'}${boards}`,
    null,
    env,
  )
  if (!cfg.ok) throw new Error(cfg.error)
  const real = realParts(env)
  let bridge: ReturnType<typeof createSimulatingBridge> | undefined
  const parts: HubParts = {
    console: real.console!,
    createBridge: (b) => {
      // rate 0: the simulated boards send nothing unless the test says so.
      bridge = createSimulatingBridge({
        ...b,
        boards: b.boards.map((x) => ({ ...x, simulate: { rate: 0 } })),
      })
      return bridge
    },
    ...o.parts?.(real),
  }
  const hub = await startHub(cfg.config, o.log ?? silentLog, parts)
  t.teardown(() => hub.close())
  if (!hub.console) throw new Error('the console did not start')
  return { hub, home, url: hub.console.url, env, bridge: () => bridge }
}

/** An HTTP client with one cookie jar, sending Origin as a browser on the console's page does. */
export class ConsoleClient {
  cookie = ''
  constructor(readonly url: string) {}

  get origin(): string {
    return new URL(this.url).origin
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(this.url + path, {
      redirect: 'manual',
      headers: { accept: 'text/html', ...(this.cookie ? { cookie: this.cookie } : {}), ...headers },
    })
  }

  /** A form post; `origin: null` leaves the header out. */
  async post(
    path: string,
    form: Record<string, string>,
    o: { origin?: string | null; json?: boolean } = {},
  ): Promise<Response> {
    const origin = o.origin === undefined ? this.origin : o.origin
    const res = await fetch(this.url + path, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': o.json ? 'application/json' : 'application/x-www-form-urlencoded',
        ...(origin !== null ? { origin } : {}),
        ...(this.cookie ? { cookie: this.cookie } : {}),
      },
      body: o.json ? JSON.stringify(form) : new URLSearchParams(form).toString(),
    })
    this.keep(res)
    return res
  }

  keep(res: Response): void {
    const set = res.headers.get('set-cookie')
    if (set) this.cookie = set.split(';')[0] as string
  }

  /** Signs in with a one-time link as console.js would (the token from the fragment, posted). */
  async signInWithLink(link: string): Promise<Response> {
    const token = decodeURIComponent(link.split('#token=')[1] ?? '')
    return this.post('/login/link', { token }, { json: true })
  }

  /** The session's CSRF token, read from a page's sign-out form. */
  async csrf(): Promise<string> {
    const text = await (await this.get('/')).text()
    const m = /name="_csrf" value="([^"]+)"/.exec(text)
    if (!m) throw new Error('no CSRF token on the overview page (not signed in?)')
    return m[1] as string
  }
}

export interface EventStream {
  /** Every event received so far, in order. */
  got: { event: string; data: unknown }[]
  /** True once the server ended the stream. */
  ended(): boolean
  close(): void
}

/** Opens /events as EventSource would and collects what arrives. */
export async function openEvents(c: ConsoleClient, topics?: string): Promise<EventStream> {
  const ac = new AbortController()
  const res = await fetch(`${c.url}/events${topics ? `?topics=${topics}` : ''}`, {
    headers: { accept: 'text/event-stream', cookie: c.cookie },
    signal: ac.signal,
  })
  if (res.status !== 200 || !res.body) throw new Error(`/events answered ${res.status}: ${await res.text()}`)
  const got: EventStream['got'] = []
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  let buf = ''
  let ended = false
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) {
          ended = true
          return
        }
        buf += value
        let i = buf.indexOf('\n\n')
        while (i >= 0) {
          const block = buf.slice(0, i)
          buf = buf.slice(i + 2)
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (event && data !== undefined) got.push({ event, data: JSON.parse(data) })
          i = buf.indexOf('\n\n')
        }
      }
    } catch {
      // aborted
    }
  })()
  return { got, ended: () => ended, close: () => ac.abort() }
}
