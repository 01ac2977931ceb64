// Schemas shared by the route groups.
import type {} from '@fastify/swagger'
import type {} from '@fastify/rate-limit'
import type {} from '@fastify/cookie'
import { Type } from 'typebox'

/** Every error body: the message, and the code a client branches on (errors/codes.ts). */
export const Err = Type.Object({ error: Type.String(), code: Type.Optional(Type.String()) })
export const HexString = Type.String({ pattern: '^0x[0-9a-fA-F]+$', maxLength: 2048 })
export const Hash = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })
export const AddressString = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })
/** uint256 as a decimal string (ERC-8004 agent ids start at 0). */
export const AgentId = Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$' })
export const Slug = Type.String({ pattern: '^[a-z0-9-]{1,120}$' })
