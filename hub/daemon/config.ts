// hub.toml: parsed with smol-toml, checked against the settings' table (config-schema.ts), every
// error naming the field (`broker.port: must be <= 65535`). Every field has a default, so the hub
// runs with no file at all; relative paths in a file resolve against the file's folder.
import { readFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import type { XStatic } from 'typebox/schema'
import { fail, failAt, type Result } from '../../errors/codes.ts'
import { svcPaths } from '../paths.ts'
import type { BoardConfig } from '../../bridge/types.ts'
import { checkFlashProfile, type FlashProfile } from '../../bridge/flash/profile.ts'
import { mqttUrlOptions } from '../broker/mqtt-url.ts'
import { isLoopbackHost } from '../../net/loopback.ts'
import { camelKeys, snakeCase } from '../../config/keys.ts'
import { type Resolved, type ResolvedOptional, resolveSection } from '../../config/sections.ts'
import { schemaErrors as checkSchema } from '../../config/schema-errors.ts'
import { parseTomlDoc } from '../../config/toml.ts'
import { type COMPUTED, computedDefaults, HubTomlSchema } from './config-schema.ts'
import { errorText } from '../../errors/text.ts'

export { HubTomlSchema } from './config-schema.ts'
export type HubToml = XStatic<typeof HubTomlSchema>

type Sections = typeof HubTomlSchema.properties
/** The file's tables (`[[boards]]` is an array, mapped on its own). */
type Tables = Exclude<keyof Sections, 'boards'>
/** A section of hub.toml as the code reads it: camelCase, defaults filled in (config/sections.ts). */
type Section<S extends Tables> = Resolved<
  Sections[S],
  S extends keyof typeof COMPUTED ? (typeof COMPUTED)[S][number] : never
>

/** A `[[boards]]` entry: the bridge's own BoardConfig, with `simulate` as the on/off the file allows. */
export type BoardEntry = Omit<BoardConfig, 'simulate'> & {
  simulate?: boolean
  /** How `svc board flash` writes its firmware; absent: the board is not flashed by the hub. */
  flash?: FlashProfile
}

export interface HubConfig {
  /** The file read, or null when running on defaults. */
  file: string | null
  sopsDir: Section<'hub'>['sopsDir']
  dataDir: Section<'hub'>['dataDir']
  logLevel: Section<'hub'>['logLevel']
  /** `clientId`: the hub's MQTT session (persistent, so an external broker queues QoS 1 events while the hub is off). */
  broker: Omit<Section<'broker'>, 'username' | 'password' | `tls${string}` | 'wssPort'> & {
    username?: string
    password?: string
    /** The embedded broker's MQTT-over-TLS (`port`) and WebSocket-over-TLS (`wssPort`) listeners. */
    tls: { host: string; port: number | null; wssPort: number | null; cert: string; key: string } | null
  }
  api: Section<'api'>
  /** `[metrics]`: GET /metrics on its own listener when `port` is set; `token`: its bearer token's 0600 file. */
  metrics: Omit<Section<'metrics'>, 'tokenFile'> & { token: { file: string } | null }
  /** `[console]`: the hub's web console (hub/console/); `tls` = HTTPS with these PEM files. */
  console: Omit<Section<'console'>, 'tlsCert' | 'tlsKey'> & { tls: { cert: string; key: string } | null }
  webhook: Omit<Section<'webhook'>, 'secrets'> & {
    /** `[webhook.secrets]`: path → the environment variable or 0600 file holding its secret. */
    secrets: Record<string, { env: string } | { file: string }>
  }
  cron: Section<'cron'>
  filesystem: Section<'filesystem'>
  tools: Section<'tools'>
  /** `[disk]`: the reserve in MiB and/or percent of the filesystem; null = not set (hub/disk/reserve.ts). */
  disk: Section<'disk'>
  /** `[history]`: finished runs kept by age and by size; the log's segment size (hub/engine/log/). */
  history: Section<'history'>
  /** `[flash]`: the avrdude program, the wait for a new firmware's hello, the images kept per board. */
  flash: Section<'flash'>
  boards: BoardEntry[]
  /** `[homeassistant]`: MQTT discovery of the boards and the approvals count, opt-in. */
  homeassistant: Section<'homeassistant'>
  /** `[amqp]`, or null when the hub consumes no AMQP broker (amqp triggers are then inert, warned). */
  amqp: AmqpConfig | null
  /** `[chain]` as the file writes it (snake_case), or null without the section. */
  chain: NonNullable<HubToml['chain']> | null
  agent: ResolvedOptional<Sections['agent']> | null
}

/** Where the URL and its password come from; read when the hub connects (hub/triggers/amqp-url.ts). */
export type AmqpConfig = Pick<Section<'amqp'>, 'exchange' | 'queue' | 'prefetch'> & {
  url: { value: string } | { env: string }
  password: { env: string } | { file: string } | null
}

const S = HubTomlSchema.properties
/** A few defaults by name (the table holds them all). */
export const DEFAULTS = {
  brokerPort: S.broker.properties.port.default,
  apiPort: S.api.properties.port.default,
  webhookPort: S.webhook.properties.port.default,
} as const

/** A hub.toml that is wrong is BAD_CONFIG; a `--config` file that is not there NOT_FOUND, unreadable IO_FAILED. */
export type ConfigResult = Result<{ config: HubConfig }>

function timezoneError(tz: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return null
  } catch {
    return `unknown timezone "${tz}" (use an IANA name such as "UTC" or "Europe/Berlin")`
  }
}

/** Type errors as `field: message` lines (unknown fields named as such). */
export function schemaErrors(value: unknown): string[] {
  return checkSchema(HubTomlSchema, value, {
    // One spelling: a camelCase key gets the name hub.toml knows it by.
    unknownHint: (key) => (/[A-Z]/.test(key) ? `hub.toml keys are snake_case: ${snakeCase(key)}` : null),
  })
}

/** Check a parsed TOML document and fill in every default. Pure apart from reading `env`. */
export function resolveConfig(
  doc: unknown,
  file: string | null,
  env: NodeJS.ProcessEnv = process.env,
): ConfigResult {
  const where = file ?? 'hub.toml'
  const errors = schemaErrors(doc)
  if (errors.length > 0) return fail('BAD_CONFIG', `${where}: ${errors.join('; ')}`)
  const t = doc as HubToml
  const base = file ? dirname(file) : process.cwd()
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(base, p))
  const computed: Partial<Record<Tables, Record<string, unknown>>> = computedDefaults(t, env)
  /** A section of the file with its defaults, named as the code names it. */
  const section = <K extends Tables>(name: K): Section<K> =>
    resolveSection(S[name], t[name], { filled: computed[name] ?? {} }) as Section<K>
  const hub = section('hub')
  const cron = section('cron')
  const tzErr = timezoneError(cron.timezone)
  if (tzErr) return fail('BAD_CONFIG', `${where}: cron.timezone: ${tzErr}`)
  const names = new Set<string>()
  const flashProfiles: (FlashProfile | null)[] = []
  for (const [i, b] of (t.boards ?? []).entries()) {
    if (names.has(b.name))
      return fail('BAD_CONFIG', `${where}: boards[${i}].name: board "${b.name}" is configured twice`)
    names.add(b.name)
    // The bridge's rule (bridge/config.ts), checked here so the message names the hub.toml key.
    if (b.heartbeat_ms !== undefined && b.heartbeat_ms > 0 && b.heartbeat_ms < 50)
      return fail('BAD_CONFIG', `${where}: boards[${i}].heartbeat_ms: must be 0 (off) or an integer >= 50`)
    const f = boardFlash(b, `boards[${i}].flash`)
    if (typeof f === 'string') return fail('BAD_CONFIG', `${where}: ${f}`)
    flashProfiles.push(f)
  }
  const { tlsHost, tlsPort, wssPort, tlsCert, tlsKey, username, password, ...broker } = section('broker')
  if (broker.url !== null) {
    const target = mqttUrlOptions(broker.url)
    if (!target.ok) return failAt(`${where}: broker.url: `, target)
  }
  const tls = brokerTls({ tlsHost, tlsPort, wssPort, tlsCert, tlsKey }, t.broker?.tls_host !== undefined, abs)
  if (typeof tls === 'string') return fail('BAD_CONFIG', `${where}: ${tls}`)
  const { secrets: rawSecrets, ...webhook } = section('webhook')
  const secrets = webhookSecrets(rawSecrets, abs)
  if (typeof secrets === 'string') return fail('BAD_CONFIG', `${where}: ${secrets}`)
  const amqp = t.amqp === undefined ? null : amqpSection(section('amqp'), abs)
  if (typeof amqp === 'string') return fail('BAD_CONFIG', `${where}: ${amqp}`)
  const metrics = metricsSection(section('metrics'), abs)
  if (typeof metrics === 'string') return fail('BAD_CONFIG', `${where}: ${metrics}`)
  const { tlsCert: consoleCert, tlsKey: consoleKey, ...consoleRest } = section('console')
  if ((consoleCert === null) !== (consoleKey === null))
    return fail(
      'BAD_CONFIG',
      `${where}: console.tls_cert and console.tls_key: give both (PEM files) or neither`,
    )
  return {
    ok: true,
    config: {
      file,
      sopsDir: t.hub?.sops_dir !== undefined ? abs(hub.sopsDir) : hub.sopsDir,
      dataDir: t.hub?.data_dir !== undefined ? abs(hub.dataDir) : hub.dataDir,
      logLevel: hub.logLevel,
      broker: {
        ...broker,
        ...(username !== null ? { username } : {}),
        ...(password !== null ? { password } : {}),
        tls,
      },
      api: section('api'),
      metrics,
      console: {
        ...consoleRest,
        tls:
          consoleCert !== null && consoleKey !== null
            ? { cert: abs(consoleCert), key: abs(consoleKey) }
            : null,
      },
      webhook: { ...webhook, secrets },
      cron,
      filesystem: section('filesystem'),
      tools: section('tools'),
      disk: section('disk'),
      history: section('history'),
      flash: section('flash'),
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
      homeassistant: section('homeassistant'),
      amqp,
      chain: t.chain ?? null,
      agent: t.agent
        ? (resolveSection(S.agent, t.agent, { absent: 'omit' }) as ResolvedOptional<Sections['agent']>)
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
  b: Pick<Section<'broker'>, 'tlsHost' | 'tlsPort' | 'wssPort' | 'tlsCert' | 'tlsKey'>,
  hostSet: boolean,
  abs: (p: string) => string,
): HubConfig['broker']['tls'] | string {
  const { tlsPort: port, wssPort, tlsCert: cert, tlsKey: key } = b
  if (port === null && wssPort === null) {
    if (cert !== null || key !== null || hostSet)
      return 'broker.tls_cert, tls_key and tls_host apply only with broker.tls_port or broker.wss_port'
    return null
  }
  if (cert === null || key === null)
    return `broker.${port !== null ? 'tls_port' : 'wss_port'}: needs broker.tls_cert and broker.tls_key (PEM files)`
  return { host: b.tlsHost, port, wssPort, cert: abs(cert), key: abs(key) }
}

/** `[metrics]`: a token file needs the listener, and a listener beyond loopback needs the token. */
function metricsSection(m: Section<'metrics'>, abs: (p: string) => string): HubConfig['metrics'] | string {
  const { host, port, tokenFile: file } = m
  if (port === null && file !== null)
    return 'metrics.token_file applies only with metrics.port (the metrics listener)'
  if (port !== null && file === null && !isLoopbackHost(host))
    return `metrics.host = "${host}" is not a loopback address: the metrics listener then needs metrics.token_file, a file of mode 0600 holding the bearer token scrapers send`
  return { host, port, token: file !== null ? { file: abs(file) } : null }
}

/** `[amqp]`: one URL source, at most one password source, and no password written in the URL. */
function amqpSection(a: Section<'amqp'>, abs: (p: string) => string): AmqpConfig | string {
  if ((a.url === null) === (a.urlEnv === null)) return 'amqp: needs exactly one of amqp.url and amqp.url_env'
  if (a.url !== null) {
    let u: URL
    try {
      u = new URL(a.url)
    } catch {
      return `amqp.url: "${a.url}" is not a URL`
    }
    if (u.password !== '')
      return 'amqp.url: holds a password; put it in amqp.password_env or amqp.password_file (mode 0600) instead'
  }
  if (a.passwordEnv !== null && a.passwordFile !== null)
    return 'amqp: amqp.password_env and amqp.password_file are alternatives; give one'
  return {
    url: a.url !== null ? { value: a.url } : { env: a.urlEnv as string },
    password:
      a.passwordEnv !== null
        ? { env: a.passwordEnv }
        : a.passwordFile !== null
          ? { file: abs(a.passwordFile) }
          : null,
    exchange: a.exchange,
    queue: a.queue,
    prefetch: a.prefetch,
  }
}

/** `[webhook.secrets]`: each path names exactly one place, an env variable or a file. */
function webhookSecrets(
  s: Section<'webhook'>['secrets'],
  abs: (p: string) => string,
): Record<string, { env: string } | { file: string }> | string {
  const out: Record<string, { env: string } | { file: string }> = {}
  for (const [hook, ref] of Object.entries(s ?? {})) {
    const r = ref as { env?: string; file?: string }
    if ((r.env === undefined) === (r.file === undefined))
      return `webhook.secrets."${hook}": give exactly one of env (a variable name) and file (a 0600 file)`
    out[hook] = r.env !== undefined ? { env: r.env } : { file: abs(r.file as string) }
  }
  return out
}

export function parseConfig(
  text: string,
  file: string | null,
  env: NodeJS.ProcessEnv = process.env,
): ConfigResult {
  const parsed = parseTomlDoc(text, file ?? 'hub.toml')
  return parsed.ok ? resolveConfig(parsed.doc, file, env) : parsed
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
    return code === 'ENOENT'
      ? fail('NOT_FOUND', `config file ${file} does not exist`)
      : fail('IO_FAILED', `cannot read config file ${file}: ${errorText(err)}`)
  }
  return parseConfig(text, resolve(file), env)
}
