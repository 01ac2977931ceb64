// The embedded broker's door: Aedes' `authenticate`, `authorizePublish` and `authorizeSubscribe`
// hooks over the accounts file and the ACL (hub/broker/acl.ts).
//
// Mosquitto 2.0's rule: anonymous clients only on a listener bound to loopback. The listener a
// connection came through decides, never its source address (a client reaching a 0.0.0.0
// listener through 127.0.0.1 is still on a listener open to the network).
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { type FSWatcher, watch } from 'node:fs'
import { basename, dirname } from 'node:path'
import type { AuthenticateError, Client, PublishPacket, Subscription } from 'aedes'
import type { Log } from '../log.ts'
import { createRateLimitedWarn } from '../../bridge/log-limit.ts'
import { fail, type Result } from '../../errors/codes.ts'
import { mayPublish, maySubscribe, type Principal } from './acl.ts'
import type { CheckedAccount } from './accounts.ts'
import { readAccountsFile } from './accounts-file.ts'
import { hashPassword, parseScryptHash, type ScryptHash, verifyPassword } from './password.ts'
import { errorText } from '../../errors/text.ts'

/** A listening socket of the broker, as the rule sees it. */
export interface Listener {
  /** `mqtt`, `ws`, `mqtts`, `wss`. */
  name: string
  host: string
  loopback: boolean
}

/** The hub's own session logs in with this name: outside USER_NAME_PATTERN, so no account can take it. */
export const HUB_USER = '@hub'

/** A refusal by the ACL: logged here with its context, so the broker's clientError log skips it. */
export class AclError extends Error {
  override name = 'AclError'
}

// CONNACK return codes, MQTT 3.1.1 §3.2.2.3.
const IDENTIFIER_REJECTED = 2
const SERVER_UNAVAILABLE = 3
const BAD_USER_OR_PASSWORD = 4
const NOT_AUTHORIZED = 5

// scrypt runs on libuv's thread pool, which LevelDB shares: a flood of connects with made-up
// passwords must not starve the broker's own persistence. Two at a time, a short queue, and the
// rest told "server unavailable" to come back later.
const MAX_VERIFYING = 2
const MAX_WAITING = 64

/**
 * Refusals are logged at a bounded rate, like the bridge's dropped lines: a client hammering the
 * door must not fill the disk. One window per kind and known account (anonymous and unknown names
 * share one, so made-up names cannot open windows without end); the first refusal in a window is
 * logged at once, the rest as one summary with their count when the window ends.
 */
export const REFUSAL_LOG_INTERVAL_MS = 10_000

export interface BrokerAuthOptions {
  /** `<data_dir>/broker-accounts`; null: no accounts (anonymous loopback clients only). */
  accountsFile: string | null
  /** The boards on the hub's own ports (`[[boards]]`): their topics are the hub's. */
  hubBoards: readonly string[]
  /** The hub session's client id: only the hub may use it (so nobody can take its session over). */
  hubClientId: string | null
  /** Some listener is beyond loopback, so a client there needs an account. */
  needsAccounts: boolean
  log: Log
}

export interface BrokerAuth {
  /** Tags a connection with its listener; call before `aedes.handle(conn)`. */
  tag(conn: object, listener: Listener): void
  authenticate(
    client: Client,
    username: string | undefined,
    password: Buffer | undefined,
    done: (error: AuthenticateError | null, success: boolean | null) => void,
  ): void
  authorizePublish(client: Client | null, packet: PublishPacket, done: (error?: Error | null) => void): void
  authorizeSubscribe(
    client: Client,
    sub: Subscription,
    done: (error: Error | null, sub?: Subscription | null) => void,
  ): void
  /** Forget a client that went away. */
  forget(client: Client): void
  /** Who a connected client logged in as (undefined once it is gone). */
  principal(client: Client): Principal | undefined
  /** The hub session's credential: made fresh at each start, held in memory only. */
  hubLogin: { username: string; password: string }
  accountCount(): number
  /**
   * Re-reads the accounts file. A bad file is logged and the accounts in force stay; clients whose
   * account was removed or changed are disconnected (they log in again, or not).
   */
  reload(): Promise<void>
  /** Re-reads the file whenever it changes (the folder is watched: `svc hub user` renames into it). */
  watch(): void
  close(): void
}

export type BrokerAuthResult = Result<{ auth: BrokerAuth }>

const HUB: Principal = { kind: 'hub' }
const ANONYMOUS: Principal = { kind: 'anonymous' }

function refusal(code: number, message: string): AuthenticateError {
  return Object.assign(new AclError(message), { returnCode: code }) as AuthenticateError
}

export async function createBrokerAuth(opts: BrokerAuthOptions): Promise<BrokerAuthResult> {
  const { log } = opts
  let accounts = new Map<string, CheckedAccount>()
  if (opts.accountsFile !== null) {
    const read = await readAccountsFile(opts.accountsFile)
    if (!read.ok) return read
    accounts = new Map(read.accounts.map((a) => [a.name, a]))
  }
  const hubOwned = new Set(opts.hubBoards)
  const hubPassword = randomBytes(32).toString('hex')
  const hubPasswordBytes = Buffer.from(hubPassword)
  const listeners = new WeakMap<object, Listener>()
  const principals = new WeakMap<Client, Principal>()
  // Clients logged in with an account, to disconnect when the account changes.
  const byAccount = new Map<Client, CheckedAccount>()

  // Unknown names are checked against a throwaway hash, so a refusal takes as long either way and
  // the timing does not tell which account names exist.
  let dummy: Promise<ScryptHash> | null = null
  const dummyHash = (): Promise<ScryptHash> =>
    (dummy ??= hashPassword(randomBytes(16).toString('hex')).then((h) => {
      const p = parseScryptHash(h)
      if (!p.ok) throw new Error(p.error)
      return p.value
    }))

  // A finished check hands its slot straight to the next in line.
  let verifying = 0
  const waiting: (() => void)[] = []
  async function verifyLimited(password: Buffer, stored: ScryptHash | null): Promise<boolean | 'busy'> {
    if (verifying < MAX_VERIFYING) verifying++
    else if (waiting.length >= MAX_WAITING) return 'busy'
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      const ok = await verifyPassword(password, stored ?? (await dummyHash()))
      return ok && stored !== null
    } finally {
      const next = waiting.shift()
      if (next) next()
      else verifying--
    }
  }

  function who(client: Client, username: string | undefined): Record<string, unknown> {
    const listener = listeners.get(client.conn)
    const remote = (client.conn as { remoteAddress?: string }).remoteAddress
    return {
      client: client.id,
      user: username ?? null,
      listener: listener?.name ?? null,
      remote: remote ?? null,
    }
  }

  const refusals = createRateLimitedWarn(log, REFUSAL_LOG_INTERVAL_MS, Date.now)
  const refused = (kind: string, user: string | undefined, fields: object, msg: string): void =>
    refusals.warn(`${kind}:${user !== undefined && accounts.has(user) ? user : '-'}`, fields, msg)

  let watcher: FSWatcher | null = null
  let debounce: NodeJS.Timeout | null = null

  const auth: BrokerAuth = {
    tag(conn, listener) {
      listeners.set(conn, listener)
    },

    principal: (client) => principals.get(client),

    authenticate(client, username, password, done) {
      const listener = listeners.get(client.conn)
      const refuse = (code: number, why: string): void => {
        refused('connect', username, { ...who(client, username), why }, 'mqtt connect refused')
        done(refusal(code, why), null)
      }
      const accept = (p: Principal, account?: CheckedAccount): void => {
        // MQTT-3.1.2-8 ff.: a will is a publish the client asks for in advance; Mosquitto refuses
        // the CONNECT when its topic is not one the client may publish on, and so do we.
        const will = (client as unknown as { _will?: { topic?: string } })._will
        if (will?.topic !== undefined && p.kind !== 'hub') {
          const v = mayPublish(p, will.topic, hubOwned)
          if (!v.ok) return refuse(NOT_AUTHORIZED, `will refused: ${v.error}`)
        }
        principals.set(client, p)
        // A client that hung up while scrypt ran is never connected; nothing to remember.
        if (account && !client.closed) byAccount.set(client, account)
        done(null, true)
      }

      if (username === HUB_USER) {
        if (
          password &&
          password.length === hubPasswordBytes.length &&
          timingSafeEqual(password, hubPasswordBytes)
        )
          return accept(HUB)
        return refuse(BAD_USER_OR_PASSWORD, 'bad user name or password')
      }
      if (opts.hubClientId !== null && client.id === opts.hubClientId)
        return refuse(IDENTIFIER_REJECTED, `client id "${client.id}" is the hub's own session`)
      if (username === undefined) {
        if (listener?.loopback) return accept(ANONYMOUS)
        return refuse(
          NOT_AUTHORIZED,
          `anonymous clients are accepted only on a loopback listener; ${listener ? `${listener.name} on ${listener.host}` : 'this listener'} needs a user name and password`,
        )
      }
      const account = accounts.get(username)
      verifyLimited(password ?? Buffer.alloc(0), account?.scrypt ?? null).then(
        (ok) => {
          if (ok === 'busy') return refuse(SERVER_UNAVAILABLE, 'too many logins in progress; try again')
          if (!ok || !account) return refuse(BAD_USER_OR_PASSWORD, 'bad user name or password')
          // The account may have changed while scrypt ran: only the one verified against counts.
          if (!sameAccount(accounts.get(username), account))
            return refuse(BAD_USER_OR_PASSWORD, 'account changed while logging in; try again')
          accept({ kind: 'account', name: account.name, role: account.role, board: account.board }, account)
        },
        (err: unknown) => {
          log.error({ ...who(client, username), err: errorText(err) }, 'password check failed')
          refuse(SERVER_UNAVAILABLE, 'password check failed')
        },
      )
    },

    authorizePublish(client, packet, done) {
      // A null client: a will left from before a restart, its sender gone. Checked with the rights
      // anyone has, so it can never land on the hub's topics.
      const p = client === null ? ANONYMOUS : principals.get(client)
      if (p === undefined) return done(new AclError('publish from a client that never logged in'))
      const v = mayPublish(p, packet.topic, hubOwned)
      if (v.ok) return done(null)
      // MQTT-3.3.5-2: a publish the server will not accept is answered by closing the connection
      // (3.1.1 has no negative acknowledgement).
      refused(
        'publish',
        userOf(p),
        { ...(client ? who(client, userOf(p)) : { client: null }), topic: packet.topic, why: v.error },
        'mqtt publish refused',
      )
      done(new AclError(v.error))
    },

    authorizeSubscribe(client, sub, done) {
      const p = principals.get(client)
      const v = p === undefined ? fail('UNAUTHORIZED', 'not logged in') : maySubscribe(p, sub.topic)
      if (v.ok) return done(null, sub)
      // MQTT-3.9.3: a refused filter gets return code 0x80 in the SUBACK; the connection stays.
      refused(
        'subscribe',
        p ? userOf(p) : undefined,
        { ...who(client, p ? userOf(p) : undefined), filter: sub.topic, why: v.error },
        'mqtt subscribe refused',
      )
      done(null, null)
    },

    forget(client) {
      byAccount.delete(client)
    },

    hubLogin: { username: HUB_USER, password: hubPassword },

    accountCount: () => accounts.size,

    async reload() {
      if (opts.accountsFile === null) return
      const read = await readAccountsFile(opts.accountsFile)
      if (!read.ok) {
        log.error({ err: read.error }, 'broker accounts not reloaded; the accounts in force stay')
        return
      }
      const next = new Map(read.accounts.map((a) => [a.name, a]))
      accounts = next
      let dropped = 0
      for (const [client, was] of byAccount) {
        if (sameAccount(next.get(was.name), was)) continue
        byAccount.delete(client)
        principals.delete(client)
        if (!client.closed) {
          dropped++
          client.close()
        }
      }
      log.info({ accounts: next.size, disconnected: dropped }, 'broker accounts reloaded')
      if (next.size === 0 && opts.needsAccounts)
        log.warn(
          'no broker accounts left: listeners beyond loopback refuse every client (npx svc hub user add <name> --role …)',
        )
    },

    watch() {
      if (opts.accountsFile === null || watcher) return
      const file = opts.accountsFile
      try {
        watcher = watch(dirname(file), (_event, name) => {
          if (name !== basename(file)) return
          if (debounce) clearTimeout(debounce)
          debounce = setTimeout(() => {
            debounce = null
            void auth.reload()
          }, 50)
        })
        watcher.on('error', (err) =>
          log.warn({ err: err.message }, 'broker accounts: watching stopped; SIGHUP reloads'),
        )
      } catch (err) {
        log.warn({ err: errorText(err) }, 'broker accounts: cannot watch the folder; SIGHUP reloads')
      }
    },

    close() {
      refusals.close()
      if (debounce) clearTimeout(debounce)
      watcher?.close()
      watcher = null
    },
  }
  return { ok: true, auth }
}

function sameAccount(a: CheckedAccount | undefined, b: CheckedAccount): boolean {
  return a !== undefined && a.hash === b.hash && a.role === b.role && a.board === b.board
}

function userOf(p: Principal): string | undefined {
  return p.kind === 'account' ? p.name : p.kind === 'hub' ? HUB_USER : undefined
}
