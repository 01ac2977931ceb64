// The effective configuration written back in hub.toml's own spelling (snake_case, the file's
// sections), so `svc hub config > hub.toml` is a file the hub reads back to the same config.
// Pure. The mapping is the inverse of resolveConfig in config.ts: a few fields are placed
// explicitly (the [hub] section, the broker's TLS listener, references to secrets); everything
// else is the camelCase field with its name in snake_case.
import type { HubConfig } from './config.ts'
import { isPlain, snakeCase } from './config-keys.ts'

type Doc = Record<string, unknown>

/**
 * A value's keys in snake_case, recursively; nulls and undefined left out (TOML has no null).
 * A field that is a reference to where a value lives (`{ value }`, `{ env }` or `{ file }`, as
 * resolveConfig builds them) becomes `name`, `name_env` or `name_file`, as the file writes it.
 */
function toToml(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(toToml)
  if (!isPlain(v)) return v
  const out: Doc = {}
  for (const [k, raw] of Object.entries(v)) {
    if (raw === null || raw === undefined) continue
    const key = snakeCase(k)
    const ref = referenceOf(raw)
    if (ref) out[ref.kind === 'value' ? key : `${key}_${ref.kind}`] = ref.to
    else out[key] = toToml(raw)
  }
  return out
}

function referenceOf(v: unknown): { kind: 'value' | 'env' | 'file'; to: unknown } | null {
  if (!isPlain(v)) return null
  const keys = Object.keys(v)
  if (keys.length !== 1) return null
  const kind = keys[0] as string
  return kind === 'value' || kind === 'env' || kind === 'file' ? { kind, to: v[kind] } : null
}

export interface PrintedConfig {
  /** The document, in hub.toml's shape. */
  doc: Doc
  /** Fields set in the file but not printed (secrets), as hub.toml names them. */
  hidden: string[]
}

/** The config as hub.toml writes it: every default filled in, secrets left out (and named). */
export function configToToml(c: HubConfig): PrintedConfig {
  const hidden: string[] = []
  const { file: _file, sopsDir, dataDir, logLevel, broker, webhook, boards, chain, console, ...rest } = c
  const { tls, password, ...brokerRest } = broker
  if (password !== undefined) hidden.push('broker.password')
  const doc: Doc = {
    hub: { sops_dir: sopsDir, data_dir: dataDir, log_level: logLevel },
    broker: {
      ...(toToml(brokerRest) as Doc),
      ...(tls
        ? {
            tls_host: tls.host,
            ...(tls.port !== null ? { tls_port: tls.port } : {}),
            ...(tls.wssPort !== null ? { wss_port: tls.wssPort } : {}),
            tls_cert: tls.cert,
            tls_key: tls.key,
          }
        : {}),
    },
  }
  const { secrets, ...webhookRest } = webhook
  const others = toToml(rest) as Doc
  // Section order as in the README's reference: api, webhook, cron, … then anything newer.
  if (others.api !== undefined) doc.api = others.api
  const { tls: consoleTls, ...consoleRest } = console
  doc.console = {
    ...(toToml(consoleRest) as Doc),
    ...(consoleTls ? { tls_cert: consoleTls.cert, tls_key: consoleTls.key } : {}),
  }
  // Webhook paths are keys chosen by the SOP author: kept exactly, never re-spelled.
  doc.webhook = {
    ...(toToml(webhookRest) as Doc),
    ...(Object.keys(secrets).length > 0 ? { secrets } : {}),
  }
  for (const [k, v] of Object.entries(others)) if (k !== 'api') doc[k] = v
  if (boards.length > 0) doc.boards = toToml(boards)
  // [chain] is kept as the file wrote it (the attestation part reads it).
  if (chain !== null) doc.chain = chain
  return { doc, hidden }
}
