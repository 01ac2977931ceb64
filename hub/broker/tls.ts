// The certificate and key for the broker's TLS listeners (MQTT over TLS, WebSocket over TLS),
// read once at start and checked as a pair, so a wrong path or a key that does not match the
// certificate stops the start with the field named instead of failing each client's handshake.
import { readFile } from 'node:fs/promises'
import { createSecureContext } from 'node:tls'

export interface TlsFiles {
  cert: string
  key: string
}

export type TlsResult = { ok: true; cert: Buffer; key: Buffer } | { ok: false; error: string }

export async function readTlsFiles(files: TlsFiles): Promise<TlsResult> {
  const read = async (field: string, path: string): Promise<Buffer | string> => {
    try {
      return await readFile(path)
    } catch (err) {
      return `broker.${field}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`
    }
  }
  const cert = await read('tls_cert', files.cert)
  if (typeof cert === 'string') return { ok: false, error: cert }
  const key = await read('tls_key', files.key)
  if (typeof key === 'string') return { ok: false, error: key }
  try {
    createSecureContext({ cert, key })
  } catch (err) {
    return {
      ok: false,
      error: `broker.tls_cert / broker.tls_key: not a PEM certificate with its matching key (${(err as Error).message})`,
    }
  }
  return { ok: true, cert, key }
}
