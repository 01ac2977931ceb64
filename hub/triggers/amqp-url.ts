// The AMQP URL the hub connects to, and the same URL as logs may show it. The password comes from
// an environment variable or a 0600 file (never hub.toml), and a URL is only ever logged masked.
import { readFile, stat } from 'node:fs/promises'
import { fail, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import type { AmqpConfig } from '../daemon/config.ts'

export type AmqpTarget = Result<{ url: string; shown: string }>

/** `amqp://user:secret@host/vh` → `amqp://user:***@host/vh`; anything unparsable is not shown. */
export function maskUrl(url: string): string {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return '(unparsable URL)'
  }
  if (u.password !== '') u.password = '***'
  return u.toString()
}

/** Pure: the URL with `password` set (percent-encoded), or an error naming the field. */
export function withPassword(url: string, password: string | undefined, from: string): AmqpTarget {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return fail('BAD_CONFIG', `${from}: not a URL`)
  }
  if (u.protocol !== 'amqp:' && u.protocol !== 'amqps:')
    return fail('BAD_CONFIG', `${from}: must start with amqp:// or amqps://, not ${u.protocol}//`)
  if (password !== undefined) {
    // amqplib reads the default user (guest) when the URL names none; a password alone is a mistake.
    if (u.username === '')
      return fail('BAD_CONFIG', `${from}: a password is configured but the URL names no user`)
    u.password = password
  }
  const full = u.toString()
  return { ok: true, url: full, shown: maskUrl(full) }
}

/** Reads the URL and the password where `[amqp]` says they are. */
export async function amqpTarget(cfg: AmqpConfig, env: NodeJS.ProcessEnv): Promise<AmqpTarget> {
  let url: string
  let from: string
  if ('value' in cfg.url) {
    url = cfg.url.value
    from = 'amqp.url'
  } else {
    const v = env[cfg.url.env]
    if (v === undefined || v === '')
      return fail('BAD_CONFIG', `amqp.url_env: environment variable ${cfg.url.env} is not set`)
    url = v
    from = `amqp.url_env (${cfg.url.env})`
  }
  let password: string | undefined
  if (cfg.password && 'env' in cfg.password) {
    password = env[cfg.password.env]
    if (password === undefined)
      return fail('BAD_CONFIG', `amqp.password_env: environment variable ${cfg.password.env} is not set`)
  } else if (cfg.password) {
    const file = cfg.password.file
    try {
      const st = await stat(file)
      // Like the broker accounts file: a secret others can read is refused, not used.
      if ((st.mode & 0o077) !== 0)
        return fail(
          'BAD_CONFIG',
          `amqp.password_file: ${file} has mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}, readable by others; run chmod 600 ${file}`,
        )
      password = (await readFile(file, 'utf8')).replace(/\r?\n$/, '')
    } catch (err) {
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT'
      return fail(
        missing ? 'NOT_FOUND' : 'IO_FAILED',
        `amqp.password_file: cannot read ${file}: ${errorText(err)}`,
      )
    }
  }
  return withPassword(url, password, from)
}
