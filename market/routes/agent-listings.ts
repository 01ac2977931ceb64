// POST /api/agent/listings (marketplace-api): a device lists a dataset with its bearer key.
// Order of work, per the spec: check the key, re-read ownerOf, then validate, then pin.
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import type { MarketContext } from '../context.ts'
import { pinFile } from '../files/pin.ts'
import { HttpError, badRequest } from '../http/errors.ts'
import { requireAgentKey } from '../keys/bearer.ts'
import { checkListingUpload } from '../listing/check.ts'
import { makeSlug } from '../listing/slug.ts'
import { readUpload } from '../listing/upload.ts'
import type { ListingRecord } from '../store/records.ts'
import { Err } from './schemas.ts'

export const agentListingRoutes = (ctx: MarketContext): FastifyPluginAsync => async (app) => {
  app.post('/api/agent/listings', {
    schema: {
      tags: ['listings'],
      summary: 'List a dataset (multipart: title, summary, description, machineType, license, priceNative, manifest, data, image)',
      consumes: ['multipart/form-data'],
      security: [{ agentKey: [] }],
      response: { 201: Type.Object({ slug: Type.String(), url: Type.String(), status: Type.Literal('listed') }), '4xx': Err, '5xx': Err },
    },
  }, async (req, reply) => {
    const key = await requireAgentKey(req, ctx.db, ctx.chain)
    const upload = await readUpload(req)
    const c = checkListingUpload(upload, key.agentId)
    if (!c.ok) throw badRequest(c.error)
    const { fields, manifest, data, manifestBytes, image } = c.value
    const slug = makeSlug(fields.title)
    const pin = async (name: string, bytes: Uint8Array): Promise<string> => {
      const r = await pinFile(ctx.blocks, ctx.config.ipfsApi, name, bytes)
      if (!r.ok) throw new HttpError(502, `pinning ${name}: ${r.error}`)
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
    }
    await ctx.db.listings.put(slug, rec, { sync: true })
    // marketplace-api: the body carries no CIDs; they are given to buyers only.
    return reply.status(201).send({ slug, url: `/marketplace/${slug}`, status: 'listed' })
  })
}
