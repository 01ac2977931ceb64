// The local API's credentials on disk (hub/README.md: Local API): a bearer token in a file only
// the owner can read (0600), and `{ url }` of the running hub. The hub writes both at start; the
// CLI reads them. Paths default to svcPaths() (SVC_HOME overrides the home).
import { randomBytes } from 'node:crypto'
import { readFile, rm, stat } from 'node:fs/promises'
import { fail, type Result } from '../../errors/codes.ts'
import { replaceSecretFile } from '../secret-file.ts'
import { svcPaths } from '../paths.ts'

/**
 * A credential file's value, or why not: UNAVAILABLE when no hub is running (it writes both at
 * start), BAD_CONFIG for a token file others can read, IO_FAILED for one that does not hold what
 * the hub writes.
 */
export type Read<T> = Result<{ value: T }>

/** A fresh token for this hub's life, written 0600; the previous one stops working. */
export async function issueApiToken(path = svcPaths().apiToken): Promise<string> {
  const token = randomBytes(32).toString('hex')
  await replaceSecretFile(path, token + '\n')
  return token
}

/** Reads the token, refusing a file that others can read (someone could have copied it). */
export async function readApiToken(path = svcPaths().apiToken): Promise<Read<string>> {
  let st
  try {
    st = await stat(path)
  } catch {
    return fail('UNAVAILABLE', `no hub is running (no token file at ${path}); start one with \`svc hub run\``)
  }
  if ((st.mode & 0o077) !== 0)
    return fail(
      'BAD_CONFIG',
      `the token file ${path} is readable by others (mode ${(st.mode & 0o777).toString(8)}); refusing to use it`,
    )
  const token = (await readFile(path, 'utf8')).trim()
  if (!/^[0-9a-f]{64}$/.test(token))
    // Never read by the hub, only written at each start: a damaged one is mended by a restart.
    return fail(
      'IO_FAILED',
      `the token file ${path} does not hold a token; the hub writes a new one at each start: restart it`,
    )
  return { ok: true, value: token }
}

/** What the running hub tells the CLI about itself besides its URL. */
export interface HubAbout {
  /** The SOP directory it loads: `svc sop list|show|…` look there too (cli/sops-dir.ts). */
  sopsDir: string
  /** Its data folder (the engine's run store under `engine/`). */
  dataDir: string
}

export type ApiInfo = { url: string; pid?: number } & Partial<HubAbout>

export async function writeApiInfo(url: string, path = svcPaths().apiInfo, about?: HubAbout): Promise<void> {
  await replaceSecretFile(path, JSON.stringify({ url, pid: process.pid, ...about }) + '\n')
}

export async function removeApiInfo(path = svcPaths().apiInfo): Promise<void> {
  await rm(path, { force: true })
}

export async function readApiInfo(path = svcPaths().apiInfo): Promise<Read<ApiInfo>> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return fail('UNAVAILABLE', `no hub is running (no ${path}); start one with \`svc hub run\``)
  }
  try {
    const v = JSON.parse(text) as { url?: unknown; pid?: unknown; sopsDir?: unknown; dataDir?: unknown }
    if (typeof v.url === 'string' && /^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+$/.test(v.url))
      return {
        ok: true,
        value: {
          url: v.url,
          ...(Number.isSafeInteger(v.pid) ? { pid: v.pid as number } : {}),
          ...(typeof v.sopsDir === 'string' ? { sopsDir: v.sopsDir } : {}),
          ...(typeof v.dataDir === 'string' ? { dataDir: v.dataDir } : {}),
        },
      }
  } catch {
    // fall through
  }
  return fail(
    'IO_FAILED',
    `${path} does not hold a loopback API url; the hub writes it at each start: restart it`,
  )
}
