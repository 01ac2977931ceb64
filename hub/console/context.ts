// What every console page gets: the hub's parts, read-only where a page only shows them.
//
// Adding a page:
//   1. Write `hub/console/pages/<name>.ts` exporting `register(app, ctx)`: add its routes with
//      `app.get('/<name>', …)` and render with `ctx.render(req, reply, { title, nav, body })`
//      (the shared layout: header, navigation, CSP-safe scripts). Build markup with `html` from
//      web/html.ts, which escapes every value.
//   2. List it in hub/console/pages.ts (its register function, and a NAV entry if it belongs in
//      the navigation bar).
// Every route registered there is behind sign-in. A POST form carries `csrfField(req)`; the app
// checks it and the Origin header before any handler runs, so a handler never sees a forged post.
// A page that should update live adds `data-live="<topic>"` to an element and lets
// static/console.js refetch it (see events.ts for the topics).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { BridgeStats, Json, SendResult } from '../../bridge/types.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { Diagnostic, Sop } from '../../sops/types.ts'
import type { AttestStore } from '../attest/store.ts'
import type { SyncReport } from '../attest/sync.ts'
import type { SyncStatus } from '../attest/sync-status.ts'
import type { ListingEntry } from '../listing/record.ts'
import type { Flasher } from '../flash/flasher.ts'
import type { Log } from '../log.ts'
import type { DiskView } from '../disk/view.ts'
import type { Broadcaster } from './events.ts'
import { type Html, html } from '../../web/html.ts'

/** A board as the console shows it: configured name, availability, its last event. */
export interface ConsoleBoard {
  name: string
  availability: 'online' | 'offline'
  /** The last event published for the board: signal, text and when (ms). */
  lastEvent: { signal: string; text: string; at: number } | null
  /** When availability last changed (ms), or null if it never did since the hub started. */
  since: number | null
}

export interface ConsoleBoards {
  /** Every configured board, in hub.toml order. */
  list(): ConsoleBoard[]
  /** The bridge's counters per board (null when no boards are configured). */
  stats(): BridgeStats | null
  /** Sends a command to a board (boards/<b>/cmd semantics); the answer or why not. */
  send(board: string, cmd: string, args: Json, timeoutMs?: number): Promise<SendResult>
}

/** The attestation part as the console sees it; null on a hub that does not attest. */
export interface ConsoleAttestation {
  store: AttestStore
  /** What sync is doing; null without [chain] sync settings. */
  sync(): SyncStatus | null
  /** Drains the queue once now; null without [chain] sync settings. */
  syncNow: (() => Promise<SyncReport>) | null
}

/** Board firmware as the console offers it (hub/flash/); absent on a hub without boards. */
export interface ConsoleFlash {
  flasher: Flasher
  /** Whether hub.toml gives the board a flash profile. */
  hasProfile(board: string): boolean
  /** How long a flash waits for the new firmware's hello before it rolls back. */
  helloTimeoutMs: number
}

export interface ConsoleContext {
  engine: HubEngine
  /** The SOPs loaded now and their diagnostics (both change on SIGHUP reload). */
  sops(): readonly Sop[]
  diagnostics(): readonly Diagnostic[]
  sopsDir: string
  boards: ConsoleBoards
  attestation: ConsoleAttestation | null
  /** Board firmware (the board flash page); absent or null without boards. */
  flash?: ConsoleFlash | null
  /** Listing entries queued on this hub (every state); [] when none. */
  listings(): Promise<ListingEntry[]>
  /** The disk guard's state (hub/disk/); absent or null on a hub without one. */
  disk?: () => DiskView | null
  /** Server-sent events to every open console (events.ts). */
  events: Broadcaster
  log: Log
  /** Renders a whole page in the shared layout and sends it. */
  render(req: FastifyRequest, reply: FastifyReply, page: PageSpec): FastifyReply
}

export interface PageSpec {
  title: string
  /** The NAV key of the page, for aria-current; 'none' for pages outside the navigation. */
  nav: string
  body: Html
  /** HTTP status (default 200). */
  status?: number
}

/** A page module: adds its routes to the signed-in scope. */
export type ConsolePage = (app: FastifyInstance, ctx: ConsoleContext) => void | Promise<void>

/** The hidden field every POST form carries (the session's CSRF token). */
export function csrfField(req: FastifyRequest): Html {
  return html`<input type="hidden" name="_csrf" value="${req.consoleSession?.csrf ?? ''}">`
}

/** A console session as the auth layer attaches it to each signed-in request. */
export interface ConsoleSessionView {
  csrf: string
}

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession: ConsoleSessionView | null
  }
}
