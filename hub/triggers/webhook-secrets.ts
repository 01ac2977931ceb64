// Webhook secrets live at the hub, never in a SOP package: hub.toml's `[webhook.secrets]` maps a
// webhook path to the name of an environment variable or to a file (mode 0600) holding the secret
// (hub/README.md: Signed webhooks). Read once when the gateway starts; the value is never logged.
import { readFile, stat } from 'node:fs/promises'
import { fail, type Result } from '../../errors/codes.ts'
import type { Diagnostic } from '../../sops/types.ts'
import { isLoopbackHost } from '../../net/loopback.ts'
import type { TriggerPlan } from './plan.ts'

/** Where one path's secret is: an environment variable, or a file readable by its owner only. */
export type SecretRef = { env: string } | { file: string }

export type SecretsResult = Result<{ secrets: Map<string, Buffer> }>

/** Reads every referenced secret; the first one missing, empty or exposed is the error. */
export async function loadWebhookSecrets(
  refs: Readonly<Record<string, SecretRef>>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SecretsResult> {
  const secrets = new Map<string, Buffer>()
  for (const [path, ref] of Object.entries(refs)) {
    const key = `webhook.secrets."${path}"`
    if ('env' in ref) {
      const value = env[ref.env]
      if (value === undefined || value === '')
        return fail('BAD_CONFIG', `${key}: environment variable ${ref.env} is not set or empty`)
      secrets.set(path, Buffer.from(value, 'utf8'))
      continue
    }
    let mode: number
    try {
      mode = (await stat(ref.file)).mode
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      return fail(
        code === 'ENOENT' ? 'NOT_FOUND' : 'IO_FAILED',
        `${key}: cannot read ${ref.file}${code ? ` (${code})` : ''}`,
      )
    }
    // Like ssh with a private key: a secret others can read is no longer a secret.
    if ((mode & 0o077) !== 0)
      return fail(
        'BAD_CONFIG',
        `${key}: ${ref.file} is readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 ${ref.file}`,
      )
    // A trailing newline is what `echo secret > file` leaves: not part of the secret.
    const value = (await readFile(ref.file, 'utf8')).replace(/\r?\n$/, '')
    if (value === '') return fail('BAD_CONFIG', `${key}: ${ref.file} is empty`)
    secrets.set(path, Buffer.from(value, 'utf8'))
  }
  return { ok: true, secrets }
}

/**
 * On a gateway reachable beyond loopback, every webhook trigger needs a secret (secure by
 * default, as Mosquitto 2.0 is for its listeners): one problem per unsigned trigger, at its
 * SOP file and line. Pure.
 */
export function unsignedWebhooks(
  plan: TriggerPlan,
  host: string,
  secrets: ReadonlyMap<string, Buffer>,
): Diagnostic[] {
  if (isLoopbackHost(host)) return []
  const out: Diagnostic[] = []
  for (const [path, { trigger }] of plan.webhook) {
    if (secrets.has(path)) continue
    out.push({
      file: trigger.origin.file,
      line: trigger.origin.line,
      severity: 'error',
      message: `webhook trigger "${path}" has no secret, and webhook.host = "${host}" is not loopback: add \`"${path}" = { env = "NAME" }\` (or { file = "PATH" }, mode 0600) under [webhook.secrets] in hub.toml, or bind webhook.host to 127.0.0.1`,
    })
  }
  return out
}
