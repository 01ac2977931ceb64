// Key challenges and agent keys (market/API.md: POST /api/marketplace/challenges,
// POST /api/marketplace/keys, GET /api/marketplace/keys). Session cookie required.
import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { type Hex, getAddress, recoverMessageAddress } from 'viem'
import { keyChallengeMessage } from '../auth/messages.ts'
import { currentSession, requireAccount } from '../auth/session.ts'
import type { MarketContext } from '../context.ts'
import { CodedError } from '../../errors/codes.ts'
import { badRequest, chainUnreachable, conflict, forbidden, notFound } from '../http/errors.ts'
import { newAgentKey } from './agent-key.ts'
import { type OwnerReads, ownerReads, revokeStale } from './revoke.ts'
import { keyRevokeRoute } from './revoke-route.ts'
import type { ChallengeRecord, KeyRecord } from '../store/records.ts'
import { Err } from '../http/schemas.ts'
import { ChallengeBody, KeyBody, KeyView, keyView } from './schemas.ts'

export const keyRoutes =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    // The ownerOf answers of one call, shared by its revocation and its key-issue check.
    const callOwners = new WeakMap<FastifyRequest, OwnerReads>()
    // A chain that cannot be reached leaves the revocation to the next call rather than turn a
    // 400 or 404 into a 502; issuing a key still needs ownerOf and answers 502 when it cannot.
    const revokeDeferrable = async (req: FastifyRequest, owners: OwnerReads, keys: KeyRecord[]) => {
      try {
        await revokeStale(ctx.db, owners, keys, ctx.now())
      } catch (err) {
        if (!(err instanceof CodedError && err.code === 'UNREACHABLE')) throw err
        req.log.warn(`stale-key revocation deferred: ${err.message}`)
      }
    }
    await app.register(keyRevokeRoute(ctx))
    const rl = (n: 'challenges' | 'keys') => ({
      max: ctx.config.rateLimits[n].max,
      timeWindow: ctx.config.rateLimits[n].windowSeconds * 1000,
    })

    app.post<{ Body: Static<typeof ChallengeBody> }>(
      '/api/marketplace/challenges',
      {
        config: { rateLimit: rl('challenges') },
        schema: {
          tags: ['keys'],
          summary: 'A single-use challenge for the wallet to sign (kind "key": issue an agent key)',
          body: ChallengeBody,
          response: {
            201: Type.Object({ id: Type.String(), message: Type.String(), expiresAt: Type.String() }),
            '4xx': Err,
          },
        },
      },
      async (req, reply) => {
        const account = await requireAccount(req, ctx.session)
        const wallet = getAddress(req.body.wallet)
        const id = randomBytes(16).toString('base64url')
        const nonce = randomBytes(16).toString('hex')
        const rec: ChallengeRecord = {
          id,
          kind: 'key',
          account,
          agentId: req.body.agentId,
          wallet: wallet.toLowerCase(),
          message: keyChallengeMessage(
            ctx.config.displayName,
            wallet,
            ctx.chainConfig.chainId,
            req.body.agentId,
            nonce,
          ),
          expiresAt: ctx.now() + ctx.config.challengeSeconds * 1000,
          usedAt: null,
        }
        await ctx.db.challenges.put(id, rec)
        return reply
          .status(201)
          .send({ id, message: rec.message, expiresAt: new Date(rec.expiresAt).toISOString() })
      },
    )

    app.post<{ Body: Static<typeof KeyBody> }>(
      '/api/marketplace/keys',
      {
        config: { rateLimit: rl('keys') },
        // A key whose wallet lost its agent is revoked by *any* call to this route
        // (market/API.md, "Agent keys"). onRequest runs before body parsing and schema
        // validation, so a malformed body (400), an unknown challenge (404) or a failed signature
        // still revokes the caller's own stale keys; the handler adds the keys of the agent the
        // challenge names once it has read the challenge.
        onRequest: async (req) => {
          const s = await currentSession(req, ctx.session)
          if (!s) return
          const owners = ownerReads(ctx.chain)
          callOwners.set(req, owners)
          await revokeDeferrable(req, owners, await ctx.db.keysOf(s.address))
        },
        schema: {
          tags: ['keys'],
          summary: 'Issue an agent key for a signed challenge; the key is shown only in this answer',
          body: KeyBody,
          response: {
            201: Type.Object({
              key: Type.String(),
              id: Type.String(),
              agentId: Type.String(),
              prefix: Type.String(),
              device: Type.Union([Type.String(), Type.Null()]),
            }),
            '4xx': Err,
            '5xx': Err,
          },
        },
      },
      async (req, reply) => {
        const account = await requireAccount(req, ctx.session)
        const ch = await ctx.db.challenges.get(req.body.challengeId)
        if (!ch) throw notFound('challengeId: unknown challenge')
        // The agent this call names: its keys held by a wallet that lost it are revoked whatever
        // the call answers next (the new owner's first call revokes the old owner's keys).
        const owners = callOwners.get(req) ?? ownerReads(ctx.chain)
        if (ch.kind === 'key') await revokeDeferrable(req, owners, await ctx.db.activeKeysOfAgent(ch.agentId))
        if (ch.account !== account)
          throw forbidden('challengeId: the challenge was issued to another account')
        if (ch.kind !== 'key')
          throw badRequest(`challengeId: a "${String(ch.kind)}" challenge cannot issue a key`)
        if (ch.usedAt !== null) throw conflict('challengeId: challenge already used; ask for a new one')
        if (ch.expiresAt <= ctx.now()) throw badRequest('challengeId: challenge expired; ask for a new one')
        let signer: string
        try {
          signer = (
            await recoverMessageAddress({ message: ch.message, signature: req.body.signature as Hex })
          ).toLowerCase()
        } catch {
          throw badRequest('signature: not a valid signature')
        }
        if (signer !== ch.wallet)
          throw forbidden(
            `signature: signed by ${getAddress(signer)}, not by the challenge wallet ${getAddress(ch.wallet)}`,
          )
        const owner = await owners.ownerOf(ch.agentId)
        if (!owner.ok) {
          if (owner.code === 'UNREACHABLE')
            throw chainUnreachable(`chain unreachable while reading ownerOf(${ch.agentId}): ${owner.error}`)
          throw forbidden(`agent ${ch.agentId} is not registered on chain ${ctx.chainConfig.chainId}`)
        }
        if (owner.value.toLowerCase() !== signer)
          throw forbidden(`wallet ${getAddress(signer)} is not the owner of agent ${ch.agentId}`)
        const wallet = await ctx.chain.agentWallet(BigInt(ch.agentId))
        const device = wallet.ok && BigInt(wallet.value) !== 0n ? getAddress(wallet.value) : null
        const k = newAgentKey()
        const rec: KeyRecord = {
          id: randomBytes(12).toString('base64url'),
          hash: k.hash,
          prefix: k.prefix,
          agentId: ch.agentId,
          wallet: signer,
          account,
          device,
          createdAt: ctx.now(),
          revokedAt: null,
          revokedReason: null,
        }
        // Single use, atomically: the first call to commit marks the challenge; others see it used.
        // The store consumes it (a unique key in PostgreSQL, shared by every instance); the lock
        // only queues this process's own concurrent attempts.
        const won = await ctx.locks.run(`challenge:${ch.id}`, () =>
          ctx.db.useChallenge(ch.id, ctx.now(), rec),
        )
        if (!won) throw conflict('challengeId: challenge already used; ask for a new one')
        return reply
          .status(201)
          .send({ key: k.key, id: rec.id, agentId: rec.agentId, prefix: rec.prefix, device })
      },
    )

    app.get(
      '/api/marketplace/keys',
      {
        schema: {
          tags: ['keys'],
          summary: "The signed-in account's keys, without secrets",
          response: { 200: Type.Object({ keys: Type.Array(KeyView) }), '4xx': Err },
        },
      },
      async (req) => {
        const account = await requireAccount(req, ctx.session)
        return { keys: (await ctx.db.keysOf(account)).map(keyView) }
      },
    )
  }
