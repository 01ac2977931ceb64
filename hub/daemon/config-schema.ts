// Every hub.toml setting, once: its key, type, limits and default. The check (config.ts, through
// config/schema-errors.ts), HubConfig's types (config.ts, through config/sections.ts), the
// defaults and what `svc hub config` prints (config-toml.ts) all come from this table. A default
// that depends on the machine or on another setting is in `computedDefaults` below, and only there.
// Sections are in the order hub/README.md's reference lists them; `svc hub config` prints them so.
import { hostname } from 'node:os'
import { NAME_PATTERN } from '../../bridge/codec/names.ts'
import { FirmataProfile } from '../../bridge/firmata/profile.ts'
import { snakeCaseSchema } from '../../config/keys.ts'
import { svcPaths } from '../paths.ts'

const Port = { type: 'integer', minimum: 0, maximum: 65535 } as const
const EnvName = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' } as const
const Address = {
  type: 'string',
  pattern: '^0x[0-9a-fA-F]{40}$',
  errorMessage: 'must be a 0x-prefixed 20-byte address',
} as const
const PositiveNumber = {
  type: 'number',
  exclusiveMinimum: 0,
  errorMessage: 'must be a positive number',
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
    kind: { type: 'string', enum: ['serial', 'firmata'] },
    // The bridge's profile shape, spelled as hub.toml spells keys (interval_ms).
    profile: snakeCaseSchema(FirmataProfile),
    simulate: { type: 'boolean' },
    // A flash profile's name ("uno") or a table: checked by bridge/flash/profile.ts (resolveConfig).
    flash: {},
  },
  additionalProperties: false,
} as const

/** The file's shape (snake_case, everything optional) and every default. */
export const HubTomlSchema = {
  type: 'object',
  properties: {
    hub: {
      type: 'object',
      properties: {
        sops_dir: { type: 'string', minLength: 1 },
        data_dir: { type: 'string', minLength: 1 },
        log_level: {
          type: 'string',
          enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
          default: 'info',
        },
      },
      additionalProperties: false,
    },
    broker: {
      type: 'object',
      properties: {
        url: { type: 'string', pattern: '^(mqtts?|wss?|tcp|tls)://' },
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        port: { ...Port, default: 1883 },
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
    api: { type: 'object', properties: { port: { ...Port, default: 8786 } }, additionalProperties: false },
    // GET /metrics on a listener of its own (hub/metrics/listener.ts); off without a port.
    metrics: {
      type: 'object',
      properties: {
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
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
        enabled: { type: 'boolean', default: true },
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        port: { ...Port, default: 8788 },
        // HTTPS for the console (PEM files); the session cookie is Secure whenever this is set.
        tls_cert: { type: 'string', minLength: 1 },
        tls_key: { type: 'string', minLength: 1 },
      },
      additionalProperties: false,
    },
    webhook: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean', default: true },
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        port: { ...Port, default: 8787 },
        body_limit: { type: 'integer', minimum: 1, maximum: 16 * 1024 * 1024, default: 64 * 1024 },
        /** Requests per minute per client address, 0 = off. */
        rate_limit: { type: 'integer', minimum: 0, maximum: 1_000_000, default: 600 },
        // Webhook path → where its secret is (hub/triggers/webhook-secrets.ts); never the secret.
        secrets: {
          type: 'object',
          patternProperties: {
            '^/': {
              type: 'object',
              properties: { env: EnvName, file: { type: 'string', minLength: 1 } },
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
      properties: {
        timezone: { type: 'string', minLength: 1 },
        catch_up: { type: 'boolean', default: true },
      },
      additionalProperties: false,
    },
    filesystem: {
      type: 'object',
      properties: { debounce_ms: { type: 'integer', minimum: 0, maximum: 60_000, default: 200 } },
      additionalProperties: false,
    },
    tools: {
      type: 'object',
      properties: {
        http_request: { type: 'boolean', default: true },
        http_timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000, default: 10_000 },
        board_timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000, default: 5_000 },
      },
      additionalProperties: false,
    },
    // The free space the hub keeps for itself (hub/disk/reserve.ts): below it, no new work. Not
    // set: the reserve's own rule (the larger of 64 MiB and 2%).
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
    // A 16 GB card: a month of history, at most a GiB of it (Home Assistant's recorder keeps 10 days).
    history: {
      type: 'object',
      properties: {
        max_age_days: { type: 'number', exclusiveMinimum: 0, maximum: 36_500, default: 30 },
        max_mb: { type: 'number', exclusiveMinimum: 0, maximum: 1_048_576, default: 1024 },
        // A segment is read whole when the log is opened and when it is dropped: kept small.
        segment_mb: { type: 'number', exclusiveMinimum: 0, maximum: 64, default: 4 },
        // Every write waits this long for others to share its sync: fewer pages written for the
        // latency of the window; an event is still acknowledged only once it is on disk.
        commit_window_ms: { type: 'integer', minimum: 0, maximum: 1000, default: 0 },
      },
      additionalProperties: false,
    },
    // `svc board flash` (hub/flash/): the programmer, and how long a new firmware has to say hello.
    flash: {
      type: 'object',
      properties: {
        avrdude: { type: 'string', minLength: 1, default: 'avrdude' },
        hello_timeout_ms: { type: 'integer', minimum: 1000, maximum: 600_000, default: 15_000 },
        keep_images: { type: 'integer', minimum: 1, maximum: 100, default: 5 },
      },
      additionalProperties: false,
    },
    boards: { type: 'array', items: BoardSchema },
    // An OpenAI-compatible chat-completions endpoint for steps that need a model; the adapter
    // (hub/agent/openai.ts) has the defaults of the settings left out.
    agent: {
      type: 'object',
      required: ['url', 'model'],
      properties: {
        url: { type: 'string', pattern: '^https?://' },
        model: { type: 'string', minLength: 1 },
        /** Name of the environment variable holding the API key (the key never goes in hub.toml). */
        api_key_env: EnvName,
        max_rounds: { type: 'integer', minimum: 1, maximum: 64 },
        timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
      },
      additionalProperties: false,
    },
    // Home Assistant MQTT discovery (hub/mqtt-state/ha-discovery.ts): off unless asked for.
    homeassistant: {
      type: 'object',
      properties: {
        discovery: { type: 'boolean', default: false },
        // A topic prefix: no wildcard, no NUL, no leading or trailing `/`.
        prefix: {
          type: 'string',
          pattern: '^[^/#+\\u0000]+(/[^/#+\\u0000]+)*$',
          maxLength: 128,
          default: 'homeassistant',
        },
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
        url_env: EnvName,
        password_env: EnvName,
        /** A file holding the password, mode 0600. */
        password_file: { type: 'string', minLength: 1 },
        exchange: { type: 'string', minLength: 1, maxLength: 255, default: 'amq.topic' },
        queue: { type: 'string', minLength: 1, maxLength: 255 },
        prefetch: { type: 'integer', minimum: 1, maximum: 65535, default: 16 },
      },
      additionalProperties: false,
    },
    // Attestation: the record schema of `chain_attest`, and the sync (hub/attest/sync.ts), which
    // needs all five of rpc_url, validation_registry, agent_id, attestor_address and attestor_url
    // (checked when the attestation part loads: readChainSection in real-parts.ts). The optional
    // sync settings left out take the sync's own defaults (hub/README.md, "Attestation sync: fees
    // and status"), as they do for `svc attest sync`. Kept as the file writes it.
    chain: {
      type: 'object',
      properties: {
        rpc_url: { type: 'string', minLength: 1 },
        validation_registry: Address,
        agent_id: {
          anyOf: [
            { type: 'string', pattern: '^\\d+$' },
            { type: 'integer', minimum: 0 },
          ],
          errorMessage: 'must be a decimal agent id',
        },
        attestor_address: Address,
        attestor_url: { type: 'string', minLength: 1 },
        /** A JSON Schema every attested record is checked against (tools/chain_attest.ts). */
        schema: { type: 'object' },
        batch_executor: Address,
        max_fee_gwei: PositiveNumber,
        stuck_after_s: PositiveNumber,
        progress_every_s: PositiveNumber,
        max_batch_lines: { type: 'integer', minimum: 1, errorMessage: 'must be a whole number, 1 or more' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const

type Sections = typeof HubTomlSchema.properties

/** The settings whose default is computed, by section: `filled` for config/sections.ts. */
export const COMPUTED = {
  hub: ['sops_dir', 'data_dir'],
  broker: ['client_id', 'tls_host'],
  cron: ['timezone'],
  homeassistant: ['node_id'],
  amqp: ['queue'],
} as const satisfies {
  [S in keyof Sections]?: readonly (Sections[S] extends { properties: infer P } ? keyof P : never)[]
}

/**
 * The defaults that depend on the machine or on another setting. `doc` is the checked file: a
 * broker's client id, when set, names the Home Assistant node too.
 */
export function computedDefaults(
  doc: { broker?: { host?: string; client_id?: string } },
  env: NodeJS.ProcessEnv,
): { [S in keyof typeof COMPUTED]: Record<(typeof COMPUTED)[S][number], string> } {
  const paths = svcPaths(env)
  const clientId = doc.broker?.client_id ?? `svc-hub-${hostname()}`
  return {
    hub: { sops_dir: paths.sops, data_dir: paths.data },
    broker: {
      client_id: clientId,
      // The TLS listeners bind where the plain one does unless told.
      tls_host: doc.broker?.host ?? HubTomlSchema.properties.broker.properties.host.default,
    },
    cron: { timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC' },
    homeassistant: { node_id: clientId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) },
    // One queue per hub, durable across restarts.
    amqp: { queue: `svc-hub-${hostname()}` },
  }
}
