// The device's market credentials: the bearer key in `<SVC_HOME>/market.key` (mode 0600, as
// `svc key set` writes it) and the market's origin in `<SVC_HOME>/market.json`.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fail, type Result } from '../../errors/codes.ts'
import { svcPaths } from '../paths.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'

/** Agent keys start `svc_` (market/API.md, "Agent keys"); the rest is URL-safe text. */
export const KEY_PATTERN = /^svc_[A-Za-z0-9_-]{16,200}$/

export function checkKey(key: string): Result<{ key: string }> {
  const k = key.trim()
  if (!k.startsWith('svc_')) return fail('BAD_INPUT', 'a market key starts with "svc_"')
  if (!KEY_PATTERN.test(k))
    return fail('BAD_INPUT', 'a market key is "svc_" followed by 16 to 200 letters, digits, "_" or "-"')
  return { ok: true, key: k }
}

export function checkMarketUrl(url: string): Result<{ url: string }> {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return fail('BAD_INPUT', `market URL "${url}": not an absolute URL`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return fail('BAD_INPUT', `market URL "${url}": must be http or https`)
  return { ok: true, url: u.origin }
}

const marketFile = (env: NodeJS.ProcessEnv): string => join(svcPaths(env).home, 'market.json')

export async function saveKey(env: NodeJS.ProcessEnv, key: string, market?: string): Promise<void> {
  const p = svcPaths(env)
  // The new file is the temp file renamed, so it has the temp's 0600 whatever the old one had.
  await writeFileAtomic(p.marketKey, key + '\n', { mode: 0o600 })
  if (market !== undefined) await writeFileAtomic(marketFile(env), JSON.stringify({ url: market }) + '\n')
}

export async function readKey(env: NodeJS.ProcessEnv): Promise<string | null> {
  try {
    const r = checkKey(await readFile(svcPaths(env).marketKey, 'utf8'))
    return r.ok ? r.key : null
  } catch {
    return null
  }
}

export async function readMarketUrl(env: NodeJS.ProcessEnv): Promise<string | null> {
  try {
    const o = JSON.parse(await readFile(marketFile(env), 'utf8')) as { url?: unknown }
    if (typeof o.url !== 'string') return null
    const r = checkMarketUrl(o.url)
    return r.ok ? r.url : null
  } catch {
    return null
  }
}
