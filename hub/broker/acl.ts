// Who may publish and subscribe where on the embedded broker. Pure: the Aedes hooks
// (hub/broker/auth.ts) ask these functions and act on the answer.
//
// hub/DESIGN.md, "Security defaults": boards that speak MQTT themselves get `board` accounts
// confined to `boards/<name>/`; the topics of boards the hub owns, and every `availability`, are
// the hub's alone, whoever asks (an admin, an anonymous loopback client).
import { type Failure, fail } from '../../errors/codes.ts'

export const ROLES = ['admin', 'reader', 'board'] as const
export type Role = (typeof ROLES)[number]

/** Who a connection is, as the ACL sees it. */
export type Principal =
  /** The hub's own session (an in-memory credential made at each start). */
  | { kind: 'hub' }
  /** No user name, accepted only on a loopback listener (Mosquitto 2.0's local-only mode). */
  | { kind: 'anonymous' }
  | { kind: 'account'; name: string; role: Role; board: string | null }

export interface Rights {
  /** `own`: only under `boards/<its board>/`. */
  publish: 'any' | 'own' | 'none'
  subscribe: 'any' | 'own'
  /** May publish `boards/<b>/cmd` (a command the hub sends to the board it owns). */
  command: boolean
  /** May publish `svc/boards/<b>/flash` (new firmware the hub writes to the board it owns). */
  flash: boolean
}

/** What each role may do; one row to change when a new right appears. */
export const ROLE_RIGHTS: Readonly<Record<Role, Rights>> = {
  admin: { publish: 'any', subscribe: 'any', command: true, flash: true },
  reader: { publish: 'none', subscribe: 'any', command: false, flash: false },
  board: { publish: 'own', subscribe: 'own', command: false, flash: false },
}

/**
 * Anonymous loopback clients publish and subscribe as they always have (local tools, tests,
 * `mosquitto_sub`), but a command moves real hardware, so it needs an account, as the local
 * API needs its token.
 */
export const ANONYMOUS_RIGHTS: Readonly<Rights> = {
  publish: 'any',
  subscribe: 'any',
  command: false,
  flash: false,
}

export function rightsOf(p: Principal): Rights | 'all' {
  if (p.kind === 'hub') return 'all'
  if (p.kind === 'anonymous') return ANONYMOUS_RIGHTS
  return ROLE_RIGHTS[p.role]
}

/** A refusal is FORBIDDEN (who may not use the topic), or BAD_INPUT (a topic no one may use). */
export type Verdict = { ok: true } | Failure<'FORBIDDEN' | 'BAD_INPUT'>

const OK: Verdict = { ok: true }
const no = (error: string): Verdict => fail('FORBIDDEN', error)
const malformed = (error: string): Verdict => fail('BAD_INPUT', error)
// MQTT-1.5.3-2: a string carrying U+0000 is malformed; Aedes lets it through, so the ACL stops it.
const NUL = 'a topic must not contain U+0000'

/** Top-level topics the hub alone publishes under: its own state for other tools (hub/DESIGN.md, "MQTT topics"). */
export const HUB_PREFIXES: readonly string[] = ['svc']

/** `svc/boards/<b>/flash`: the one topic under svc/ others publish on, a firmware flash request. */
export function isFlashRequestTopic(levels: readonly string[]): boolean {
  return levels.length === 4 && levels[0] === 'svc' && levels[1] === 'boards' && levels[3] === 'flash'
}

/**
 * May `who` publish on `topic`? `hubOwned` holds the names of the boards the hub owns (hub.toml's
 * `[[boards]]`): everything under their `boards/<b>/` is the hub's, except `cmd`, which any
 * principal with the `command` right may send.
 */
export function mayPublish(who: Principal, topic: string, hubOwned: ReadonlySet<string>): Verdict {
  if (who.kind === 'hub') return OK
  if (topic.includes('\u0000')) return malformed(NUL)
  // MQTT 3.1.1 §4.7.2: topics starting with `$` are the server's ($SYS).
  if (topic.startsWith('$')) return no(`${topic}: topics starting with $ are the broker's`)
  const levels = topic.split('/')
  const rights = rightsOf(who) as Rights
  if (isFlashRequestTopic(levels))
    return rights.flash ? OK : no(`${topic}: ${describe(who)} may not flash board firmware`)
  if (HUB_PREFIXES.includes(levels[0] as string)) return no(`${topic}: ${levels[0]}/ topics are the hub's`)
  if (levels[0] === 'boards' && levels.length === 3) {
    if (levels[2] === 'availability') return no(`${topic}: availability is published by the hub alone`)
    if (levels[2] === 'cmd')
      return rights.command ? OK : no(`${topic}: ${describe(who)} may not send board commands`)
  }
  if (levels[0] === 'boards' && levels.length >= 3 && hubOwned.has(levels[1] as string))
    return no(`${topic}: board "${levels[1]}" is on the hub's own port; its topics are the hub's`)
  if (rights.publish === 'any') return OK
  if (rights.publish === 'none') return no(`${topic}: ${describe(who)} may not publish`)
  return underOwnBoard(who, levels)
    ? OK
    : no(`${topic}: ${describe(who)} may publish only under ${ownPrefix(who)}`)
}

/** May `who` subscribe to `filter`? A `board` account stays inside its own `boards/<name>/`. */
export function maySubscribe(who: Principal, filter: string): Verdict {
  if (who.kind === 'hub') return OK
  if (filter.includes('\u0000')) return malformed(NUL)
  const rights = rightsOf(who) as Rights
  if (rights.subscribe === 'any') return OK
  return underOwnBoard(who, filter.split('/'))
    ? OK
    : no(`${filter}: ${describe(who)} may subscribe only under ${ownPrefix(who)}`)
}

// A literal `boards/<board>/` prefix (no wildcard in the first two levels) and something after it.
function underOwnBoard(who: Principal, levels: readonly string[]): boolean {
  if (who.kind !== 'account' || who.board === null) return false
  return levels.length >= 3 && levels[0] === 'boards' && levels[1] === who.board
}

function ownPrefix(who: Principal): string {
  return who.kind === 'account' && who.board !== null ? `boards/${who.board}/` : '(nothing)'
}

function describe(who: Principal): string {
  if (who.kind === 'anonymous') return 'an anonymous client'
  if (who.kind === 'hub') return 'the hub'
  return `account "${who.name}" (role ${who.role})`
}
