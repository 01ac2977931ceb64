// Reading the multipart listing upload into named fields and files, with every size limit
// enforced while streaming (market/API.md, "Limits"). Unknown or repeated parts are refused.
import type { FastifyRequest } from 'fastify'
import type { MultipartFile, MultipartValue } from '@fastify/multipart'
import { CodedError } from '../../errors/codes.ts'
import { badRequest, tooLarge } from '../http/errors.ts'
import { LIMITS } from '../../records/listing-fields.ts'
import { errorText } from '../../errors/text.ts'

export const TEXT_FIELDS = [
  'title',
  'summary',
  'description',
  'machineType',
  'license',
  'priceNative',
  'preview',
] as const
export const FILE_FIELDS = ['manifest', 'data', 'image'] as const
type FileField = (typeof FILE_FIELDS)[number]

export interface Upload {
  fields: Record<string, string>
  files: Partial<Record<FileField, Buffer>>
}

/** Options for @fastify/multipart: the largest file it may stream before flagging it truncated. */
export const MULTIPART_LIMITS = {
  fileSize: LIMITS.fileBytes,
  // A little above the real counts, so a repeated or unknown part gets its own message below.
  files: FILE_FIELDS.length + 2,
  fields: TEXT_FIELDS.length + 4,
  parts: TEXT_FIELDS.length + FILE_FIELDS.length + 6,
  // 8,000 characters of description can be 32,000 bytes of UTF-8.
  fieldSize: 64 * 1024,
}

const mb = (n: number): string => `${n / (1024 * 1024)} MB (${n.toLocaleString('en')} bytes)`

export async function readUpload(req: FastifyRequest): Promise<Upload> {
  if (!req.isMultipart())
    throw badRequest('body: expected multipart/form-data with the listing fields and files')
  try {
    return await readParts(req)
  } catch (err) {
    drainBody(req)
    throw err
  }
}

/**
 * A refusal mid-body (an image over its cap, a bad part) stops reading with the rest of the
 * body still on the socket, piped into a multipart parser nobody reads any more: Node does not
 * discard a body that was being consumed, so the next request on a keep-alive connection would
 * wait behind it for ever (RFC 9112 §9.3: a server that answers before the body ends must read
 * and discard it or close). The rest is read and dropped, so the connection stays usable; a body
 * that never ends is cut by the server's requestTimeout. A file over the multipart `fileSize`
 * limit does not need this: the parser keeps reading (and dropping) to the end of the body.
 */
function drainBody(req: FastifyRequest): void {
  const raw = req.raw
  if (raw.complete || raw.destroyed) return
  raw.unpipe()
  raw.resume()
}

async function readParts(req: FastifyRequest): Promise<Upload> {
  const out: Upload = { fields: {}, files: {} }
  try {
    for await (const part of req.parts()) {
      if (part.type === 'field') {
        const p = part as MultipartValue<unknown>
        if (!(TEXT_FIELDS as readonly string[]).includes(p.fieldname))
          throw badRequest(`${p.fieldname}: not a listing field`)
        if (p.fieldname in out.fields) throw badRequest(`${p.fieldname}: given more than once`)
        if (p.valueTruncated)
          throw tooLarge(`${p.fieldname}: longer than ${MULTIPART_LIMITS.fieldSize} bytes`)
        // HTML forms send line breaks as CRLF; count and store them as LF.
        out.fields[p.fieldname] = String(p.value).replace(/\r\n/g, '\n')
        continue
      }
      const f = part as MultipartFile
      const name = f.fieldname as FileField
      if (!(FILE_FIELDS as readonly string[]).includes(name)) {
        f.file.resume()
        throw badRequest(`${f.fieldname}: not a listing file`)
      }
      if (out.files[name]) {
        f.file.resume()
        throw badRequest(`${name}: given more than once`)
      }
      const cap = name === 'image' ? LIMITS.imageBytes : LIMITS.fileBytes
      const chunks: Buffer[] = []
      let size = 0
      for await (const c of f.file as AsyncIterable<Buffer>) {
        size += c.length
        if (size > cap) {
          f.file.resume()
          throw tooLarge(`${name}: larger than ${mb(cap)}`)
        }
        chunks.push(c)
      }
      if (f.file.truncated) throw tooLarge(`${name}: larger than ${mb(cap)}`)
      out.files[name] = Buffer.concat(chunks, size)
    }
  } catch (err) {
    if (err instanceof CodedError) throw err
    const e = err as { code?: string; message?: string; statusCode?: number }
    if (e.code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(`file: larger than ${mb(LIMITS.fileBytes)}`)
    if (e.code === 'FST_FILES_LIMIT' || e.code === 'FST_FIELDS_LIMIT' || e.code === 'FST_PARTS_LIMIT')
      throw tooLarge(
        `body: too many parts (the listing has ${TEXT_FIELDS.length} fields and ${FILE_FIELDS.length} files)`,
      )
    if (e.code === 'FST_INVALID_MULTIPART_CONTENT_TYPE' || e.code === 'FST_MULTIPART_INVALID_CONTENT_TYPE')
      throw badRequest('body: expected multipart/form-data')
    throw badRequest(`body: malformed multipart (${e.message ?? errorText(err)})`)
  }
  return out
}
