// Every market.toml setting, once: its key, type, limits and default. market/config.ts checks the
// file against it with the hub's helper (config/schema-errors.ts, `section.key: problem`) and
// takes every default from it. market.toml spells its keys in camelCase, as the code does.
import { CHAIN_ID } from '../chain/chain-id.ts'

// The market's own wording of each rule (`port: must be an integer from 0 to 65535`), kept from
// before the check was a schema; the hub's says typebox's (`broker.port: must be <= 65535`).
const NON_EMPTY = 'must be a non-empty string'
const Text = { type: 'string', minLength: 1, errorMessage: NON_EMPTY } as const
const Bool = <const D extends boolean>(d: D) =>
  ({ type: 'boolean', default: d, errorMessage: 'must be true or false' }) as const
const Int = (minimum: number, maximum: number) =>
  ({
    type: 'integer',
    minimum,
    maximum,
    errorMessage: `must be an integer from ${minimum} to ${maximum}`,
  }) as const
const IntOr = <const D extends number>(minimum: number, maximum: number, d: D) =>
  ({ ...Int(minimum, maximum), default: d }) as const
const HttpUrl = (example: string) =>
  ({
    type: 'string',
    pattern: '^https?://',
    errorMessage: `must be an absolute http(s) URL${example}`,
  }) as const
const Address = {
  type: 'string',
  pattern: '^0x[0-9a-fA-F]{40}$',
  errorMessage: 'must be a 0x address',
} as const

/** `[rateLimit.<route>]`: at most `max` requests per client in `windowSeconds`. */
const RateLimitSchema = <const M extends number>(max: M) =>
  ({
    type: 'object',
    properties: { max: IntOr(1, 1_000_000, max), windowSeconds: IntOr(1, 86_400, 60) },
    additionalProperties: false,
  }) as const

export const MarketTomlSchema = {
  type: 'object',
  properties: {
    /** Line 1 of every signed message is `<displayName> marketplace`: one line. */
    displayName: {
      type: 'string',
      minLength: 1,
      pattern: '^[^\\r\\n]*$',
      errorMessage: { type: NON_EMPTY, minLength: NON_EMPTY, pattern: 'must be one line' },
      default: 'svc',
    },
    host: { ...Text, default: '127.0.0.1' },
    port: IntOr(0, 65535, 8787),
    publicUrl: HttpUrl(''),
    trustProxy: Bool(false),
    /** Default: the folder the command line gives (`<SVC_HOME>/market`). */
    dataDir: Text,
    samples: Bool(true),
    explorerUrl: HttpUrl(', like https://testnet.monadexplorer.com'),
    store: {
      type: 'object',
      properties: { url: Text, blocksDir: Text },
      additionalProperties: false,
    },
    session: {
      type: 'object',
      properties: {
        lifetimeSeconds: IntOr(60, 366 * 24 * 3600, 7 * 24 * 3600),
        cookieSecret: {
          type: 'string',
          minLength: 32,
          errorMessage: { type: NON_EMPTY, minLength: 'must be at least 32 characters' },
        },
      },
      additionalProperties: false,
    },
    challenge: {
      type: 'object',
      properties: { ttlSeconds: IntOr(10, 24 * 3600, 600) },
      additionalProperties: false,
    },
    ipfs: { type: 'object', properties: { api: Text }, additionalProperties: false },
    attestor: {
      type: 'object',
      properties: { keyFile: Text, uriBase: Text },
      additionalProperties: false,
    },
    verify: {
      type: 'object',
      properties: { intervalSeconds: IntOr(0, 7 * 24 * 3600, 600) },
      additionalProperties: false,
    },
    chain: {
      type: 'object',
      properties: {
        file: Text,
        rpcUrl: Text,
        chainId: IntOr(1, Number.MAX_SAFE_INTEGER, CHAIN_ID),
        identityRegistry: Address,
        validationRegistry: Address,
        attestor: Address,
        payout: Address,
        batchSize: IntOr(1, 5000, 500),
        concurrency: IntOr(1, 64, 2),
      },
      additionalProperties: false,
    },
    rateLimit: {
      type: 'object',
      properties: {
        challenges: RateLimitSchema(20),
        keys: RateLimitSchema(20),
        verify: RateLimitSchema(30),
        purchase: RateLimitSchema(30),
        signIn: RateLimitSchema(30),
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const
