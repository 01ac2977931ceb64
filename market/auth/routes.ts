// Sign-In with Ethereum (EIP-4361), the market's identity provider for browsers.
//   GET  /api/auth/nonce    → { nonce }            (single use, expires with the challenge TTL)
//   POST /api/auth/verify   { message, signature } → { address, expiresAt } + svc_session cookie
//   GET  /api/auth/session  → { address, expiresAt } or 401
//   POST /api/auth/signout  → { signedOut }
import type { FastifyPluginAsync } from 'fastify'
import { Type, type Static } from 'typebox'
import { type Hex, getAddress, recoverMessageAddress } from 'viem'
import { generateSiweNonce, parseSiweMessage, validateSiweMessage } from 'viem/siwe'
import { assertSameOrigin, ownOrigin } from './origin.ts'
import { currentSession, endSession, startSession } from './session.ts'
import type { MarketContext } from '../context.ts'
import { badRequest, unauthorized } from '../http/errors.ts'
import { Err, HexString } from '../http/schemas.ts'

const VerifyBody = Type.Object(
  { message: Type.String({ minLength: 1, maxLength: 4096 }), signature: HexString },
  { additionalProperties: false },
)

export const authRoutes =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    const limit = ctx.config.rateLimits.signIn
    const rateLimit = { max: limit.max, timeWindow: limit.windowSeconds * 1000 }

    app.get(
      '/api/auth/nonce',
      {
        config: { rateLimit },
        schema: {
          tags: ['auth'],
          summary: 'A single-use SIWE nonce',
          response: { 200: Type.Object({ nonce: Type.String() }), '4xx': Err },
        },
      },
      async () => {
        const nonce = generateSiweNonce()
        await ctx.db.nonces.put(nonce, { nonce, expiresAt: ctx.now() + ctx.config.challengeSeconds * 1000 })
        return { nonce }
      },
    )

    app.post<{ Body: Static<typeof VerifyBody> }>(
      '/api/auth/verify',
      {
        config: { rateLimit },
        schema: {
          tags: ['auth'],
          summary: 'Sign in: verify an EIP-4361 message and set the svc_session cookie',
          body: VerifyBody,
          response: { 200: Type.Object({ address: Type.String(), expiresAt: Type.String() }), '4xx': Err },
        },
      },
      async (req, reply) => {
        // Login CSRF: another site must not sign a visitor in as someone else.
        assertSameOrigin(req, ctx.config.publicUrl)
        const fields = parseSiweMessage(req.body.message)
        if (!fields.address || !fields.nonce || !fields.domain || fields.chainId === undefined)
          throw badRequest(
            'message: not an EIP-4361 message (address, domain, chain id and nonce are required)',
          )
        const origin = new URL(ownOrigin(req, ctx.config.publicUrl))
        if (fields.domain !== origin.host)
          throw badRequest(`message: domain is ${fields.domain}, expected ${origin.host}`)
        if (fields.chainId !== ctx.chainConfig.chainId)
          throw badRequest(`message: chain id is ${fields.chainId}, expected ${ctx.chainConfig.chainId}`)
        if (!validateSiweMessage({ message: fields, time: new Date(ctx.now()) }))
          throw badRequest('message: expired or not yet valid (expirationTime / notBefore)')
        let signer: string
        try {
          signer = await recoverMessageAddress({
            message: req.body.message,
            signature: req.body.signature as Hex,
          })
        } catch {
          throw badRequest('signature: not a valid signature')
        }
        if (getAddress(signer) !== getAddress(fields.address))
          throw unauthorized(`signature: signed by ${signer}, not by ${fields.address}`)
        // The nonce is consumed only by a valid sign-in, atomically, so a replay finds it gone.
        const nonce = fields.nonce
        const ok = await ctx.locks.run(`nonce:${nonce}`, () => ctx.db.consumeNonce(nonce, ctx.now()))
        if (!ok)
          throw unauthorized('message: unknown, used or expired nonce; ask /api/auth/nonce for a new one')
        const s = await startSession(req, reply, fields.address, ctx.session)
        return { address: getAddress(s.address), expiresAt: new Date(s.expiresAt).toISOString() }
      },
    )

    app.get(
      '/api/auth/session',
      {
        schema: {
          tags: ['auth'],
          summary: 'Who is signed in',
          response: { 200: Type.Object({ address: Type.String(), expiresAt: Type.String() }), '4xx': Err },
        },
      },
      async (req) => {
        const s = await currentSession(req, ctx.session)
        if (!s) throw unauthorized('not signed in')
        return { address: getAddress(s.address), expiresAt: new Date(s.expiresAt).toISOString() }
      },
    )

    app.post(
      '/api/auth/signout',
      {
        schema: {
          tags: ['auth'],
          summary: 'Sign out: end the session and clear the cookie',
          response: { 200: Type.Object({ signedOut: Type.Boolean() }), '4xx': Err },
        },
      },
      async (req, reply) => {
        assertSameOrigin(req, ctx.config.publicUrl)
        return { signedOut: await endSession(req, reply, ctx.session) }
      },
    )
  }
