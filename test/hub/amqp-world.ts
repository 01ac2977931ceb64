// What the amqp tests share: SOP folders with amqp triggers, a hub.toml with `[amqp]`, a
// publisher with confirms (persistent messages), a log that records what the hub said, and the
// runs of a SOP with their payloads.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import amqplib, { type ConfirmChannel, type Options } from 'amqplib'
import { createEngine } from '../../hub/engine/index.ts'
import type { Log } from '../../hub/log.ts'
import type { AmqpSourceOptions } from '../../hub/triggers/amqp.ts'
import { startTriggerRouter, type TriggerRouter } from '../../hub/triggers/router.ts'
import { matches } from '../../sops/conditions.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import { loadSops } from '../../sops/load.ts'
import { buildToolRegistry } from '../../tools/registry.ts'
import type { Teardown } from '../helpers/tmp.ts'

export interface AmqpTriggerSpec {
  routing_key: string
  condition?: string
}

export async function writeAmqpSop(
  sopsDir: string,
  name: string,
  triggers: AmqpTriggerSpec[],
): Promise<void> {
  await mkdir(join(sopsDir, name), { recursive: true })
  const toml = [
    '[sop]',
    `name = "${name}"`,
    'description = "d"',
    'execution_mode = "deterministic"',
    'max_concurrent = 8',
    'agent = "a"',
    ...triggers.flatMap((tr) => [
      '',
      '[[triggers]]',
      'type = "amqp"',
      `routing_key = ${JSON.stringify(tr.routing_key)}`,
      ...(tr.condition !== undefined ? [`condition = ${JSON.stringify(tr.condition)}`] : []),
    ]),
    '',
  ].join('\n')
  await writeFile(join(sopsDir, name, 'SOP.toml'), toml)
  await writeFile(
    join(sopsDir, name, 'SOP.md'),
    `# ${name}\n\n## Steps\n\n1. **Pause**\n   - call: {"tool":"wait","args":{"ms":1}}\n`,
  )
}

export interface Publisher {
  publish(routingKey: string, body: string, opts?: Options.Publish): Promise<void>
  channel: ConfirmChannel
  close(): Promise<void>
}

/** Persistent messages, each confirmed by the broker (so it is on its disk) before this resolves. */
export async function publisher(t: Teardown, url: string, exchange = 'amq.topic'): Promise<Publisher> {
  const conn = await amqplib.connect(url)
  const channel = await conn.createConfirmChannel()
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await conn.close().catch(() => {})
  }
  t.teardown(close)
  return {
    channel,
    async publish(routingKey, body, opts = {}) {
      channel.publish(exchange, routingKey, Buffer.from(body), { persistent: true, ...opts })
      await channel.waitForConfirms()
    },
    close,
  }
}

export type RecordingLog = Log & { lines: { level: string; obj: unknown; msg: string }[]; text(): string }

/** Every line the hub logs, with its fields, so a test can look for a URL or a secret in them. */
export function recordingLog(): RecordingLog {
  const lines: { level: string; obj: unknown; msg: string }[] = []
  const at = (level: string) => (obj: unknown, msg?: string) =>
    void lines.push({ level, obj, msg: typeof obj === 'string' ? obj : (msg ?? '') })
  const log = {
    lines,
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    debug: at('debug'),
    text: () => lines.map((l) => `${l.level} ${l.msg} ${JSON.stringify(l.obj)}`).join('\n'),
  }
  return log as unknown as RecordingLog
}

/**
 * The hub's own parts for the amqp path, without the MQTT side: the SOPs from `dir/sops`, the
 * engine on LevelDB in `dir/engine`, the trigger router with its amqp source. A child process
 * runs the same (amqp-hub-child.ts), so a test can kill it by pid and start these again.
 */
export async function startAmqpParts(
  dir: string,
  url: string,
  queue: string,
  log: Log,
  beforeAck?: AmqpSourceOptions['beforeAck'],
): Promise<{
  engine: HubEngine
  router: TriggerRouter
  /** Stops the trigger sources, waiting for the deliveries being admitted (the engine stays open). */
  stopTriggers(): Promise<void>
  close(): Promise<void>
}> {
  const { sops, diagnostics } = await loadSops(join(dir, 'sops'))
  if (diagnostics.some((d) => d.severity === 'error')) throw new Error(JSON.stringify(diagnostics))
  const registry = buildToolRegistry({ publish: async () => {}, http: false })
  if (!registry.ok) throw new Error(registry.error)
  const engine = await createEngine({ sops, tools: registry.tools, dbPath: join(dir, 'engine'), log })
  const router = await startTriggerRouter(sops, {
    engine,
    matches,
    log,
    cron: { timezone: 'UTC', catchUp: false, statePath: join(dir, 'cron.json') },
    filesystem: { debounceMs: 20 },
    amqp: {
      url,
      shownUrl: url,
      exchange: 'amq.topic',
      queue,
      prefetch: 16,
      bindingsFile: join(dir, 'amqp-bindings.json'),
      reconnect: { initialMs: 100, maxMs: 1000 },
      ...(beforeAck ? { beforeAck } : {}),
    },
  })
  let stopping: Promise<void> | null = null
  const stopTriggers = () => (stopping ??= router.stop())
  return {
    engine,
    router,
    stopTriggers,
    async close() {
      await stopTriggers()
      await engine.close()
    },
  }
}

/**
 * The payloads of the runs a SOP's triggers started, from the engine's durable admission records
 * (what the amqp source waits for before it acknowledges), each read from its run.
 */
export async function startedPayloads(engine: HubEngine, sop: string): Promise<unknown[]> {
  const out: unknown[] = []
  for (const a of await engine.admissions()) {
    if (a.sop !== sop || a.outcome !== 'started' || a.runId === undefined) continue
    out.push((await engine.getRun(a.runId))?.trigger.payload)
  }
  return out
}
