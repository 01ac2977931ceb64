// The certificate and key for the broker's TLS listeners (MQTT over TLS, WebSocket over TLS),
// read once at start and checked as a pair, so a wrong path or a key that does not match the
// certificate stops the start with the field named instead of failing each client's handshake.
import { readFile } from 'node:fs/promises'
import { createSecureContext } from 'node:tls'
import { type Failure, fail, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'

export interface TlsFiles {
  cert: string
  key: string
}

export type TlsResult = Result<{ cert: Buffer; key: Buffer }>

export async function readTlsFiles(files: TlsFiles): Promise<TlsResult> {
  const read = async (field: string, path: string): Promise<Buffer | Failure> => {
    try {
      return await readFile(path)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      // A path hub.toml names that is not there is NOT_FOUND; any other failure to read, IO_FAILED.
      return fail(
        code === 'ENOENT' ? 'NOT_FOUND' : 'IO_FAILED',
        `broker.${field}: cannot read ${path}: ${code ?? errorText(err)}`,
      )
    }
  }
  const cert = await read('tls_cert', files.cert)
  if (!Buffer.isBuffer(cert)) return cert
  const key = await read('tls_key', files.key)
  if (!Buffer.isBuffer(key)) return key
  try {
    createSecureContext({ cert, key })
  } catch (err) {
    return fail(
      'BAD_CONFIG',
      `broker.tls_cert / broker.tls_key: not a PEM certificate with its matching key (${errorText(err)})`,
    )
  }
  return { ok: true, cert, key }
}
