// The effective configuration written back in hub.toml's own spelling (snake_case, the file's
// sections), so `svc hub config > hub.toml` is a file the hub reads back to the same config.
// Pure. Sections and keys are the settings' table's (config-schema.ts), in its order: each key is
// the resolved field of the same name in camelCase, except the few resolveConfig places
// elsewhere (the [hub] section, the TLS listeners, references to where a secret or URL lives).
import { camelCase, isPlain, snakeCase } from '../../config/keys.ts'
import type { HubConfig } from './config.ts'
import { HubTomlSchema } from './config-schema.ts'

type Doc = Record<string, unknown>

/** A value's keys in snake_case, recursively; nulls and undefined left out (TOML has no null). */
function toToml(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(toToml)
  if (!isPlain(v)) return v
  const out: Doc = {}
  for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[snakeCase(k)] = toToml(x)
  return out
}

export interface PrintedConfig {
  /** The document, in hub.toml's shape. */
  doc: Doc
  /** Fields set in the file but not printed (secrets), as hub.toml names them. */
  hidden: string[]
}

/** The keys resolveConfig does not keep under their own name, by section, as hub.toml writes them. */
function placed(c: HubConfig): Record<string, Doc> {
  const { tls } = c.broker
  const a = c.amqp
  return {
    hub: { sops_dir: c.sopsDir, data_dir: c.dataDir, log_level: c.logLevel },
    broker: {
      password: undefined, // never printed
      tls_host: tls?.host,
      tls_port: tls?.port,
      wss_port: tls?.wssPort,
      tls_cert: tls?.cert,
      tls_key: tls?.key,
    },
    metrics: { token_file: c.metrics.token?.file },
    console: { tls_cert: c.console.tls?.cert, tls_key: c.console.tls?.key },
    // Webhook paths are keys chosen by the SOP author: kept exactly, never re-spelled.
    webhook: { secrets: Object.keys(c.webhook.secrets).length > 0 ? c.webhook.secrets : undefined },
    amqp: {
      url: a && 'value' in a.url ? a.url.value : undefined,
      url_env: a && 'env' in a.url ? a.url.env : undefined,
      password_env: a?.password && 'env' in a.password ? a.password.env : undefined,
      password_file: a?.password && 'file' in a.password ? a.password.file : undefined,
    },
  }
}

/** The config as hub.toml writes it: every default filled in, secrets left out (and named). */
export function configToToml(c: HubConfig): PrintedConfig {
  const hidden = c.broker.password !== undefined ? ['broker.password'] : []
  const elsewhere = placed(c)
  const doc: Doc = {}
  for (const [name, schema] of Object.entries(HubTomlSchema.properties)) {
    if (!('properties' in schema)) {
      // [[boards]]: each entry as the bridge's BoardConfig has it, in hub.toml's spelling.
      if (c.boards.length > 0) doc.boards = toToml(c.boards)
      continue
    }
    // [chain] is kept as the file wrote it (the attestation part reads it).
    if (name === 'chain') {
      if (c.chain !== null) doc.chain = c.chain
      continue
    }
    const resolved = name === 'hub' ? {} : (c as unknown as Doc)[camelCase(name)]
    if (!isPlain(resolved)) continue // a section that is off ([amqp], [agent])
    const own = elsewhere[name] ?? {}
    const section: Doc = {}
    for (const key of Object.keys(schema.properties)) {
      const v = key in own ? own[key] : resolved[camelCase(key)]
      if (v !== null && v !== undefined) section[key] = key in own ? v : toToml(v)
    }
    doc[name] = section
  }
  return { doc, hidden }
}
