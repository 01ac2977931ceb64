// hub.toml: parsed with smol-toml, checked with typebox, every error naming the field
// (`broker.port: must be <= 65535`). Every field has a default, so the hub runs with no file at
// all; relative paths in a file resolve against the file's folder.
import { readFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { existsSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { parse as parseToml, TomlError } from 'smol-toml'
import { Errors, type XStatic } from 'typebox/schema'
import { svcPaths } from '../paths.ts'
import { NAME_PATTERN } from '../../bridge/codec/names.ts'
import { FirmataProfile } from '../../bridge/firmata/profile.ts'
import type { BoardConfig } from '../../bridge/types.ts'
import { checkFlashProfile, type FlashProfile } from '../../bridge/flash/profile.ts'
import { mqttUrlOptions } from '../broker/mqtt-url.ts'
import { isLoopbackHost } from '../../net/loopback.ts'
import { camelKeys, snakeCase, snakeCaseSchema } from './config-keys.ts'

// The schema is a JSON Schema literal checked by typebox/schema (which the engine loads anyway),
// not built with typebox's Type builders and checked by typebox/value: those two modules are
// ~440 files and ~3.3 MB of heap that every `svc hub` paid at start for this one check (issue 4).
// typebox/value's Errors is typebox/schema's Errors, so every message is the same.
const Port = { type: 'integer', minimum: 0, maximum: 65535 } as const
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
const LogLevel = {
  anyOf: LOG_LEVELS.map((l) => ({ type: 'string', const: l })) as {
    type: 'string'
    const: (typeof LOG_LEVELS)[number]
  }[],
} as const

const BoardSchema = {
  type: 'object',
  required: ['name', 'port'],
  properties: {
    name: { type: 'string', pattern: NAME_PATTERN },
    port: { type: 'string', minLength: 1 },
    baud: { type: 'integer', minimum: 50, maximum: 4_000_000 },
    line_cap: { type: 'integer', minimum: 16, maximum: 1_048_576 },
    heartbeat_ms: { type: 'integer', minimum: 0 },
    kind: {
      anyOf: [
        { type: 'string', const: 'serial' },
        { type: 'string', const: 'firmata' },
      ],
    },
    // The bridge's profile shape, spelled as hub.toml spells keys (interval_ms).
    profile: snakeCaseSchema(FirmataProfile),
    simulate: { type: 'boolean' },
    // A flash profile's name ("uno") or a table: checked by bridge/flash/profile.ts (resolveConfig).
    flash: {},
  },
  additionalProperties: false,
} as const

/** The file's shape (snake_case, everything optional). */
export const HubTomlSchema = {
  type: 'object',
  properties: {
    hub: {
      type: 'object',
      properties: {
        sops_dir: { type: 'string', minLength: 1 },
        data_dir: { type: 'string', minLength: 1 },
        log_level: LogLevel,
      },
      additionalProperties: false,
    },
    broker: {
      type: 'object',
      properties: {
        url: { type: 'string', pattern: '^(mqtts?|wss?|tcp|tls)://' },
        host: { type: 'string', minLength: 1 },
        port: Port,
        ws_port: Port,
        client_id: { type: 'string', minLength: 1, maxLength: 128 },
        username: { type: 'string' },
        password: { type: 'string' },
        // TLS listeners of the embedded broker (hub/broker/tls.ts); cert and key are PEM files.
        tls_host: { type: 'string', minLength: 1 },
        tls_port: Port,
        wss_port: Port,
        tls_cert: { type: 'string', minLength: 1 },
        tls_key: { type: 'string', minLength: 1 },
      },
      additionalProperties: false,
    },
    api: { type: 'object', properties: { port: Port }, additionalProperties: false },
    // GET /metrics on a listener of its own (hub/metrics/listener.ts); off without a port.
    metrics: {
      type: 'object',
      properties: {
        host: { type: 'string', minLength: 1 },
        port: Port,
        token_file: { type: 'string', minLength: 1 },
      },
      additionalProperties: false,
    },
    // The web console (hub/console/): on by default, loopback unless asked; beyond loopback it
    // needs the owner password (`svc hub console-password`) or the hub refuses to start.
    console: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        host: { type: 'string', minLength: 1 },
        port: Port,
        // HTTPS for the console (PEM files); the session cookie is Secure whenever this is set.
        tls_cert: { type: 'string', minLength: 1 },
        tls_key: { type: 'string', minLength: 1 },
      },
      additionalProperties: false,
    },
    webhook: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        host: { type: 'string', minLength: 1 },
        port: Port,
        body_limit: { type: 'integer', minimum: 1, maximum: 16 * 1024 * 1024 },
        rate_limit: { type: 'integer', minimum: 0, maximum: 1_000_000 },
        // Webhook path → where its secret is (hub/triggers/webhook-secrets.ts); never the secret.
        secrets: {
          type: 'object',
          patternProperties: {
            '^/': {
              type: 'object',
              properties: {
                env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
                file: { type: 'string', minLength: 1 },
              },
              additionalProperties: false,
            },
          },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    cron: {
      type: 'object',
      properties: { timezone: { type: 'string', minLength: 1 }, catch_up: { type: 'boolean' } },
      additionalProperties: false,
    },
    filesystem: {
      type: 'object',
      properties: { debounce_ms: { type: 'integer', minimum: 0, maximum: 60_000 } },
      additionalProperties: false,
    },
    tools: {
      type: 'object',
      properties: {
        http_request: { type: 'boolean' },
        http_timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
        board_timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
      },
      additionalProperties: false,
    },
    // The free space the hub keeps for itself (hub/disk/reserve.ts): below it, no new work.
    disk: {
      type: 'object',
      properties: {
        reserve_mb: { type: 'number', minimum: 0, maximum: 1_048_576 },
        reserve_percent: { type: 'number', minimum: 0, maximum: 50 },
      },
      additionalProperties: false,
    },
    // How much finished-run history the engine keeps (hub/engine/log/retention.ts): whichever
    // bound is reached first. Unfinished runs and the admission state are never dropped.
    history: {
      type: 'object',
      properties: {
        max_age_days: { type: 'number', exclusiveMinimum: 0, maximum: 36_500 },
        max_mb: { type: 'number', exclusiveMinimum: 0, maximum: 1_048_576 },
        // A segment is read whole when the log is opened and when it is dropped: kept small.
        segment_mb: { type: 'number', exclusiveMinimum: 0, maximum: 64 },
        // Every write waits this long for others to share its sync: fewer pages written for the
        // latency of the window; an event is still acknowledged only once it is on disk.
        commit_window_ms: { type: 'integer', minimum: 0, maximum: 1000 },
      },
      additionalProperties: false,
    },
    // `svc board flash` (hub/flash/): the programmer, and how long a new firmware has to say hello.
    flash: {
      type: 'object',
      properties: {
        avrdude: { type: 'string', minLength: 1 },
        hello_timeout_ms: { type: 'integer', minimum: 1000, maximum: 600_000 },
        keep_images: { type: 'integer', minimum: 1, maximum: 100 },
      },
      additionalProperties: false,
    },
    boards: { type: 'array', items: BoardSchema },
    // Home Assistant MQTT discovery (hub/mqtt-state/ha-discovery.ts): off unless asked for.
    homeassistant: {
      type: 'object',
      properties: {
        discovery: { type: 'boolean' },
        // A topic prefix: no wildcard, no NUL, no leading or trailing `/`.
        prefix: { type: 'string', pattern: '^[^/#+\\u0000]+(/[^/#+\\u0000]+)*$', maxLength: 128 },
        // HA's rule for the node id level of a discovery topic.
        node_id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
      },
      additionalProperties: false,
    },
    // AMQP 0-9-1 triggers (hub/triggers/amqp.ts); the password never goes in hub.toml or the URL.
    amqp: {
      type: 'object',
      properties: {
        url: { type: 'string', pattern: '^amqps?://' },
        /** Name of an environment variable holding the whole URL (it may carry the password). */
        url_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
        password_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
        /** A file holding the password, mode 0600. */
        password_file: { type: 'string', minLength: 1 },
        exchange: { type: 'string', minLength: 1, maxLength: 255 },
        queue: { type: 'string', minLength: 1, maxLength: 255 },
        prefetch: { type: 'integer', minimum: 1, maximum: 65535 },
      },
      additionalProperties: false,
    },
    // Attestation settings, checked by the attestation part when it loads (hub/daemon/parts.ts).
    chain: { type: 'object', patternProperties: { '^.*$': {} } },
    // An OpenAI-compatible chat-completions endpoint for steps that need a model.
    agent: {
      type: 'object',
      required: ['url', 'model'],
      properties: {
        url: { type: 'string', pattern: '^https?://' },
        model: { type: 'string', minLength: 1 },
        /** Name of the environment variable holding the API key (the key never goes in hub.toml). */
        api_key_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
        max_rounds: { type: 'integer', minimum: 1, maximum: 64 },
        timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const
export type HubToml = XStatic<typeof HubTomlSchema>

/** A `[[boards]]` entry: the bridge's own BoardConfig, with `simulate` as the on/off the file allows. */
export type BoardEntry = Omit<BoardConfig, 'simulate'> & {
  simulate?: boolean
  /** How `svc board flash` writes its firmware; absent: the board is not flashed by the hub. */
  flash?: FlashProfile
}

export interface HubConfig {
  /** The file read, or null when running on defaults. */
  file: string | null
  sopsDir: string
  dataDir: string
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** `clientId`: the hub's MQTT session (persistent, so an external broker queues QoS 1 events while the hub is off). */
  broker: {
    url: string | null
    host: string
    port: number
    wsPort: number | null
    clientId: string
    username?: string
    password?: string
    /** The embedded broker's MQTT-over-TLS (`port`) and WebSocket-over-TLS (`wssPort`) listeners. */
    tls: { host: string; port: number | null; wssPort: number | null; cert: string; key: string } | null
  }
  api: { port: number }
  /** `[metrics]`: GET /metrics on its own listener when `port` is set; `token`: its bearer token's 0600 file. */
  metrics: { host: string; port: number | null; token: { file: string } | null }
  /** `[console]`: the hub's web console (hub/console/); `tls` = HTTPS with these PEM files. */
  console: { enabled: boolean; host: string; port: number; tls: { cert: string; key: string } | null }
  /** `rateLimit`: requests per minute per client address, 0 = off. */
  webhook: {
    enabled: boolean
    host: string
    port: number
    bodyLimit: number
    rateLimit: number
    /** `[webhook.secrets]`: path → the environment variable or 0600 file holding its secret. */
    secrets: Record<string, { env: string } | { file: string }>
  }
  cron: { timezone: string; catchUp: boolean }
  filesystem: { debounceMs: number }
  tools: { httpRequest: boolean; httpTimeoutMs: number; boardTimeoutMs: number }
  /** `[disk]`: the reserve in MiB and/or percent of the filesystem; null = not set (hub/disk/reserve.ts). */
  disk: { reserveMb: number | null; reservePercent: number | null }
  /** `[history]`: finished runs kept by age and by size; the log's segment size (hub/engine/log/). */
  history: { maxAgeDays: number; maxMb: number; segmentMb: number; commitWindowMs: number }
  /** `[flash]`: the avrdude program, the wait for a new firmware's hello, the images kept per board. */
  flash: { avrdude: string; helloTimeoutMs: number; keepImages: number }
  boards: BoardEntry[]
  /** `[homeassistant]`: MQTT discovery of the boards and the approvals count, opt-in. */
  homeassistant: { discovery: boolean; prefix: string; nodeId: string }
  /** `[amqp]`, or null when the hub consumes no AMQP broker (amqp triggers are then inert, warned). */
  amqp: AmqpConfig | null
  chain: Record<string, unknown> | null
  agent: { url: string; model: string; apiKeyEnv?: string; maxRounds?: number; timeoutMs?: number } | null
}

/** Where the URL and its password come from; read when the hub connects (hub/triggers/amqp-url.ts). */
export interface AmqpConfig {
  url: { value: string } | { env: string }
  password: { env: string } | { file: string } | null
  exchange: string
  queue: string
  prefetch: number
}

export const DEFAULTS = {
  brokerHost: '127.0.0.1',
  brokerPort: 1883,
  apiPort: 8786,
  metricsHost: '127.0.0.1',
  consoleHost: '127.0.0.1',
  consolePort: 8788,
  webhookHost: '127.0.0.1',
  webhookPort: 8787,
  webhookBodyLimit: 64 * 1024,
  webhookRateLimit: 600,
  debounceMs: 200,
  httpTimeoutMs: 10_000,
  boardTimeoutMs: 5_000,
  flashAvrdude: 'avrdude',
  flashHelloTimeoutMs: 15_000,
  flashKeepImages: 5,
  // A 16 GB card: a month of history, at most a GiB of it (Home Assistant's recorder keeps 10 days).
  historyMaxAgeDays: 30,
  historyMaxMb: 1024,
  historySegmentMb: 8,
} as const

export type ConfigResult = { ok: true; config: HubConfig } | { ok: false; error: string }

function systemTimezone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
}

function timezoneError(tz: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return null
  } catch {
    return `unknown timezone "${tz}" (use an IANA name such as "UTC" or "Europe/Berlin")`
  }
}

/** A key as hub.toml writes it: bare when TOML allows, else quoted (`webhook.secrets."/h"`). */
function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key)
}

function fieldName(instancePath: string): string {
  // JSON Pointer segments (RFC 6901): `~1` is `/`, `~0` is `~`.
  const parts = instancePath
    .split('/')
    .filter((p) => p !== '')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
  return (
    parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? tomlKey(p) : `.${tomlKey(p)}`)).join('') ||
    '(top level)'
  )
}

/** Type errors as `field: message` lines (unknown fields named as such). */
export function schemaErrors(value: unknown): string[] {
  const out: string[] = []
  const [, errors] = Errors(HubTomlSchema, value)
  for (const e of errors) {
    if (e.keyword === 'boolean') continue // reported once by its additionalProperties parent
    if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperties?: string[] }).additionalProperties ?? []
      const at = fieldName(e.instancePath)
      for (const key of extra)
        out.push(
          `${at === '(top level)' ? tomlKey(key) : `${at}.${tomlKey(key)}`}: unknown field${
            // One spelling: a camelCase key gets the name hub.toml knows it by.
            /[A-Z]/.test(key) ? ` (hub.toml keys are snake_case: ${snakeCase(key)})` : ''
          }`,
        )
      continue
    }
    if (e.keyword === 'anyOf' && e.instancePath.endsWith('log_level')) {
      out.push(`${fieldName(e.instancePath)}: must be one of fatal, error, warn, info, debug, trace, silent`)
      continue
    }
    if (e.keyword === 'const') continue // union members; the anyOf line above says it
    out.push(`${fieldName(e.instancePath)}: ${e.message}`)
  }
  return [...new Set(out)]
}

/** Check a parsed TOML document and fill in every default. Pure apart from reading `env`. */
export function resolveConfig(
  doc: unknown,
  file: string | null,
  env: NodeJS.ProcessEnv = process.env,
): ConfigResult {
  const where = file ?? 'hub.toml'
  const errors = schemaErrors(doc)
  if (errors.length > 0) return { ok: false, error: `${where}: ${errors.join('; ')}` }
  const t = doc as HubToml
  const base = file ? dirname(file) : process.cwd()
  const path = (p: string | undefined, fallback: string): string =>
    p === undefined ? fallback : isAbsolute(p) ? p : resolve(base, p)
  const paths = svcPaths(env)
  const timezone = t.cron?.timezone ?? systemTimezone()
  const tzErr = timezoneError(timezone)
  if (tzErr) return { ok: false, error: `${where}: cron.timezone: ${tzErr}` }
  const names = new Set<string>()
  const flashProfiles: (FlashProfile | null)[] = []
  for (const [i, b] of (t.boards ?? []).entries()) {
    if (names.has(b.name))
      return { ok: false, error: `${where}: boards[${i}].name: board "${b.name}" is configured twice` }
    names.add(b.name)
    // The bridge's rule (bridge/config.ts), checked here so the message names the hub.toml key.
    if (b.heartbeat_ms !== undefined && b.heartbeat_ms > 0 && b.heartbeat_ms < 50)
      return { ok: false, error: `${where}: boards[${i}].heartbeat_ms: must be 0 (off) or an integer >= 50` }
    const f = boardFlash(b, `boards[${i}].flash`)
    if (typeof f === 'string') return { ok: false, error: `${where}: ${f}` }
    flashProfiles.push(f)
  }
  const url = t.broker?.url ?? null
  if (url !== null) {
    const target = mqttUrlOptions(url)
    if (!target.ok) return { ok: false, error: `${where}: broker.url: ${target.error}` }
  }
  const tls = brokerTls(t.broker, path)
  if (typeof tls === 'string') return { ok: false, error: `${where}: ${tls}` }
  const secrets = webhookSecrets(t.webhook?.secrets, path)
  if (typeof secrets === 'string') return { ok: false, error: `${where}: ${secrets}` }
  const amqp = amqpSection(t.amqp, path)
  if (typeof amqp === 'string') return { ok: false, error: `${where}: ${amqp}` }
  const metrics = metricsSection(t.metrics, path)
  if (typeof metrics === 'string') return { ok: false, error: `${where}: ${metrics}` }
  const c = t.console
  if ((c?.tls_cert === undefined) !== (c?.tls_key === undefined))
    return {
      ok: false,
      error: `${where}: console.tls_cert and console.tls_key: give both (PEM files) or neither`,
    }
  return {
    ok: true,
    config: {
      file,
      sopsDir: path(t.hub?.sops_dir, paths.sops),
      dataDir: path(t.hub?.data_dir, paths.data),
      logLevel: (t.hub?.log_level as HubConfig['logLevel'] | undefined) ?? 'info',
      broker: {
        url,
        host: t.broker?.host ?? DEFAULTS.brokerHost,
        port: t.broker?.port ?? DEFAULTS.brokerPort,
        wsPort: t.broker?.ws_port ?? null,
        clientId: t.broker?.client_id ?? `svc-hub-${hostname()}`,
        ...(t.broker?.username !== undefined ? { username: t.broker.username } : {}),
        ...(t.broker?.password !== undefined ? { password: t.broker.password } : {}),
        tls,
      },
      api: { port: t.api?.port ?? DEFAULTS.apiPort },
      metrics,
      console: {
        enabled: c?.enabled ?? true,
        host: c?.host ?? DEFAULTS.consoleHost,
        port: c?.port ?? DEFAULTS.consolePort,
        tls:
          c?.tls_cert !== undefined && c.tls_key !== undefined
            ? { cert: path(c.tls_cert, c.tls_cert), key: path(c.tls_key, c.tls_key) }
            : null,
      },
      webhook: {
        enabled: t.webhook?.enabled ?? true,
        host: t.webhook?.host ?? DEFAULTS.webhookHost,
        port: t.webhook?.port ?? DEFAULTS.webhookPort,
        bodyLimit: t.webhook?.body_limit ?? DEFAULTS.webhookBodyLimit,
        rateLimit: t.webhook?.rate_limit ?? DEFAULTS.webhookRateLimit,
        secrets,
      },
      cron: { timezone, catchUp: t.cron?.catch_up ?? true },
      filesystem: { debounceMs: t.filesystem?.debounce_ms ?? DEFAULTS.debounceMs },
      tools: {
        httpRequest: t.tools?.http_request ?? true,
        httpTimeoutMs: t.tools?.http_timeout_ms ?? DEFAULTS.httpTimeoutMs,
        boardTimeoutMs: t.tools?.board_timeout_ms ?? DEFAULTS.boardTimeoutMs,
      },
      disk: { reserveMb: t.disk?.reserve_mb ?? null, reservePercent: t.disk?.reserve_percent ?? null },
      history: {
        maxAgeDays: t.history?.max_age_days ?? DEFAULTS.historyMaxAgeDays,
        maxMb: t.history?.max_mb ?? DEFAULTS.historyMaxMb,
        segmentMb: t.history?.segment_mb ?? DEFAULTS.historySegmentMb,
        commitWindowMs: t.history?.commit_window_ms ?? 0,
      },
      flash: {
        avrdude: t.flash?.avrdude ?? DEFAULTS.flashAvrdude,
        helloTimeoutMs: t.flash?.hello_timeout_ms ?? DEFAULTS.flashHelloTimeoutMs,
        keepImages: t.flash?.keep_images ?? DEFAULTS.flashKeepImages,
      },
      boards: (t.boards ?? []).map((b, i) => ({
        name: b.name,
        port: b.port,
        ...(b.baud !== undefined ? { baud: b.baud } : {}),
        ...(b.line_cap !== undefined ? { lineCap: b.line_cap } : {}),
        ...(b.heartbeat_ms !== undefined ? { heartbeatMs: b.heartbeat_ms } : {}),
        ...(b.kind !== undefined ? { kind: b.kind } : {}),
        ...(b.profile !== undefined ? { profile: camelKeys<BoardEntry['profile']>(b.profile) } : {}),
        ...(b.simulate !== undefined ? { simulate: b.simulate } : {}),
        ...(flashProfiles[i] ? { flash: flashProfiles[i] } : {}),
      })),
      homeassistant: {
        discovery: t.homeassistant?.discovery ?? false,
        prefix: t.homeassistant?.prefix ?? 'homeassistant',
        nodeId:
          t.homeassistant?.node_id ??
          (t.broker?.client_id ?? `svc-hub-${hostname()}`).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64),
      },
      amqp,
      chain: t.chain ?? null,
      agent: t.agent
        ? {
            url: t.agent.url,
            model: t.agent.model,
            ...(t.agent.api_key_env !== undefined ? { apiKeyEnv: t.agent.api_key_env } : {}),
            ...(t.agent.max_rounds !== undefined ? { maxRounds: t.agent.max_rounds } : {}),
            ...(t.agent.timeout_ms !== undefined ? { timeoutMs: t.agent.timeout_ms } : {}),
          }
        : null,
    },
  }
}

/**
 * A board's `flash`: a profile name or a table in hub.toml's spelling (`max_image_bytes`), checked by
 * the bridge's flash profiles; null when absent. Only a real serial board has a bootloader to talk to.
 */
function boardFlash(b: NonNullable<HubToml['boards']>[number], at: string): FlashProfile | null | string {
  const raw: unknown = b.flash
  if (raw === undefined) return null
  if ((b.kind ?? 'serial') !== 'serial')
    return `${at}: a Firmata board's firmware is not flashed by the hub (flash StandardFirmata with the hub stopped)`
  if (b.simulate) return `${at}: a simulated board has no bootloader to flash`
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    const camel = Object.keys(raw).find((k) => /[A-Z]/.test(k))
    if (camel !== undefined)
      return `${at}.${camel}: unknown field (hub.toml keys are snake_case: ${snakeCase(camel)})`
  }
  const checked = checkFlashProfile(camelKeys(raw), at)
  // The profile's own messages spell its keys as the code does; hub.toml spells them snake_case.
  if (!checked.ok) return checked.error.replaceAll('maxImageBytes', 'max_image_bytes')
  return checked.value
}

/** The TLS listeners: a port needs both files, and files without a port are a mistake worth naming. */
function brokerTls(
  b: HubToml['broker'],
  path: (p: string | undefined, fallback: string) => string,
): HubConfig['broker']['tls'] | string {
  const port = b?.tls_port ?? null
  const wssPort = b?.wss_port ?? null
  const cert = b?.tls_cert
  const key = b?.tls_key
  if (port === null && wssPort === null) {
    if (cert !== undefined || key !== undefined || b?.tls_host !== undefined)
      return 'broker.tls_cert, tls_key and tls_host apply only with broker.tls_port or broker.wss_port'
    return null
  }
  if (cert === undefined || key === undefined)
    return `broker.${port !== null ? 'tls_port' : 'wss_port'}: needs broker.tls_cert and broker.tls_key (PEM files)`
  return {
    host: b?.tls_host ?? b?.host ?? DEFAULTS.brokerHost,
    port,
    wssPort,
    cert: path(cert, cert),
    key: path(key, key),
  }
}

/** `[metrics]`: a token file needs the listener, and a listener beyond loopback needs the token. */
function metricsSection(
  m: HubToml['metrics'],
  path: (p: string | undefined, fallback: string) => string,
): HubConfig['metrics'] | string {
  const host = m?.host ?? DEFAULTS.metricsHost
  const port = m?.port ?? null
  const file = m?.token_file
  if (port === null && file !== undefined)
    return 'metrics.token_file applies only with metrics.port (the metrics listener)'
  if (port !== null && file === undefined && !isLoopbackHost(host))
    return `metrics.host = "${host}" is not a loopback address: the metrics listener then needs metrics.token_file, a file of mode 0600 holding the bearer token scrapers send`
  return { host, port, token: file !== undefined ? { file: path(file, file) } : null }
}

/** `[amqp]`: one URL source, at most one password source, and no password written in the URL. */
function amqpSection(
  a: HubToml['amqp'],
  path: (p: string | undefined, fallback: string) => string,
): AmqpConfig | null | string {
  if (a === undefined) return null
  if ((a.url === undefined) === (a.url_env === undefined))
    return 'amqp: needs exactly one of amqp.url and amqp.url_env'
  if (a.url !== undefined) {
    let u: URL
    try {
      u = new URL(a.url)
    } catch {
      return `amqp.url: "${a.url}" is not a URL`
    }
    if (u.password !== '')
      return 'amqp.url: holds a password; put it in amqp.password_env or amqp.password_file (mode 0600) instead'
  }
  if (a.password_env !== undefined && a.password_file !== undefined)
    return 'amqp: amqp.password_env and amqp.password_file are alternatives; give one'
  return {
    url: a.url !== undefined ? { value: a.url } : { env: a.url_env as string },
    password:
      a.password_env !== undefined
        ? { env: a.password_env }
        : a.password_file !== undefined
          ? { file: path(a.password_file, a.password_file) }
          : null,
    exchange: a.exchange ?? 'amq.topic',
    queue: a.queue ?? `svc-hub-${hostname()}`,
    prefetch: a.prefetch ?? 16,
  }
}

/** `[webhook.secrets]`: each path names exactly one place, an env variable or a file. */
function webhookSecrets(
  s: NonNullable<HubToml['webhook']>['secrets'],
  path: (p: string | undefined, fallback: string) => string,
): Record<string, { env: string } | { file: string }> | string {
  const out: Record<string, { env: string } | { file: string }> = {}
  for (const [hook, ref] of Object.entries(s ?? {})) {
    const r = ref as { env?: string; file?: string }
    if ((r.env === undefined) === (r.file === undefined))
      return `webhook.secrets."${hook}": give exactly one of env (a variable name) and file (a 0600 file)`
    out[hook] = r.env !== undefined ? { env: r.env } : { file: path(r.file, r.file as string) }
  }
  return out
}

export function parseConfig(
  text: string,
  file: string | null,
  env: NodeJS.ProcessEnv = process.env,
): ConfigResult {
  let doc: unknown
  try {
    doc = parseToml(text)
  } catch (err) {
    const where = file ?? 'hub.toml'
    if (err instanceof TomlError)
      return { ok: false, error: `${where}:${err.line}:${err.column}: ${err.message.split('\n')[0]}` }
    return { ok: false, error: `${where}: ${err instanceof Error ? err.message : String(err)}` }
  }
  return resolveConfig(doc, file, env)
}

/**
 * `--config PATH` must exist; without it, `<SVC_HOME>/hub.toml` is read when present, else the
 * defaults apply.
 */
export async function loadConfig(
  path: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ConfigResult> {
  const file = path ?? join(svcPaths(env).home, 'hub.toml')
  if (path === undefined && !existsSync(file)) return resolveConfig({}, null, env)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    return {
      ok: false,
      error:
        code === 'ENOENT'
          ? `config file ${file} does not exist`
          : `cannot read config file ${file}: ${String(err)}`,
    }
  }
  return parseConfig(text, resolve(file), env)
}
