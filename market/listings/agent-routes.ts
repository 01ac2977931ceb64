// POST /api/agent/listings (market/API.md): a device lists a dataset with its bearer key.
// Order of work (market/API.md, "POST /api/agent/listings"): check the key, re-read ownerOf, then validate, then pin.
// An optional `Idempotency-Key` header (as in Stripe's and the IETF draft's
// use) makes a retried post exactly once: the same key, for the same agent key, answers the first
// listing's 201 body and lists nothing new. The device sends its local listing id there.
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import { CodedError } from '../../errors/codes.ts'
import type { MarketContext } from '../context.ts'
import { pinFile } from '../files/pin.ts'
import { badRequest } from '../http/errors.ts'
import { requireAgentKey } from '../keys/bearer.ts'
import { checkListingUpload } from './check.ts'
import { makeSlug } from './slug.ts'
import { readUpload } from './upload.ts'
import type { ListingRecord } from '../store/records.ts'
import { Err } from '../http/schemas.ts'

export const agentListingRoutes =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    app.post(
      '/api/agent/listings',
      {
        schema: {
          tags: ['listings'],
          summary:
            'List a dataset (multipart: title, summary, description, machineType, license, priceNative, preview, manifest, data, image)',
          consumes: ['multipart/form-data'],
          security: [{ agentKey: [] }],
          response: {
            201: Type.Object({ slug: Type.String(), url: Type.String(), status: Type.Literal('listed') }),
            '4xx': Err,
            '5xx': Err,
          },
        },
      },
      async (req, reply) => {
        const key = await requireAgentKey(req, ctx.db, ctx.chain)
        const idem = idempotencyKey(req.headers['idempotency-key'])
        const upload = await readUpload(req)
        if (idem === null) return reply.status(201).send(await createListing(key, upload))
        const slot = `${key.id}!${idem}`
        // The store takes the slot and lists in one step, so two concurrent retries (on any
        // instances) cannot both create a listing; the lock spares this process the second pin.
        const body = await ctx.locks.run(`listing-idem:${slot}`, async () => {
          const first = await ctx.db.idempotent<Created>(slot)
          if (first !== undefined) return first
          return createListing(key, upload, slot)
        })
        return reply.status(201).send(body)
      },
    )

    /** `slot`: also take the idempotency slot, in the same step; its first answer wins. */
    async function createListing(
      key: AgentKeyOf,
      upload: Awaited<ReturnType<typeof readUpload>>,
      slot?: string,
    ): Promise<Created> {
      const c = checkListingUpload(upload, key.agentId)
      if (!c.ok) throw new CodedError(c.code, c.error)
      const { fields, manifest, data, manifestBytes, image, preview } = c.value
      const slug = makeSlug(fields.title)
      const pin = async (name: string, bytes: Uint8Array): Promise<string> => {
        const r = await pinFile(ctx.blocks, ctx.config.ipfsApi, name, bytes)
        if (!r.ok) throw new CodedError(r.code, `pinning ${name}: ${r.error}`)
        return r.cid
      }
      const [dataCid, manifestCid, imageCid] = await Promise.all([
        pin(`${slug}.jsonl`, data),
        pin(`${slug}.manifest.json`, manifestBytes),
        image ? pin(`${slug}.image`, image.bytes) : Promise.resolve(null),
      ])
      const rec: ListingRecord = {
        slug,
        title: fields.title,
        summary: fields.summary,
        description: fields.description,
        machineType: fields.machineType,
        license: fields.license,
        priceNative: fields.priceNative,
        priceWei: fields.priceWei.toString(),
        payout: ctx.chainConfig.payout.toLowerCase(),
        agentId: key.agentId,
        keyId: key.id,
        ownerWallet: key.wallet,
        ownerAccount: key.account,
        dataCid,
        manifestCid,
        imageCid,
        imageType: image?.type ?? null,
        rows: manifest.rows.length,
        dataBytes: data.length,
        status: 'listed',
        sample: false,
        createdAt: ctx.now(),
        preview,
      }
      // The body carries no CIDs (market/API.md, "POST /api/agent/listings"); they are given to buyers only.
      const created: Created = { slug, url: `/marketplace/${slug}`, status: 'listed' }
      if (slot === undefined) {
        await ctx.db.createListing(rec)
        return created
      }
      return (await ctx.db.createListing(rec, { slot, body: created })) ?? created
    }
  }

interface Created {
  slug: string
  url: string
  status: 'listed'
}
type AgentKeyOf = Awaited<ReturnType<typeof requireAgentKey>>

/** Absent: null. Present: 1 to 255 visible ASCII characters, else a 400 naming the header. */
function idempotencyKey(v: string | string[] | undefined): string | null {
  if (v === undefined) return null
  if (Array.isArray(v) || !/^[\x21-\x7e]{1,255}$/.test(v))
    throw badRequest('Idempotency-Key: must be one header of 1 to 255 visible ASCII characters')
  return v
}
