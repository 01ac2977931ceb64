// `svc board flash`, the hub's side: one flash at a time per board, in the order that keeps a board
// recoverable at every step (hub/README.md, "Board firmware"):
//   release the port → read the current image back (kept) → write the new one and verify it →
//   reclaim the port → wait for the hello of the new firmware.
// If verifying fails, or the expected hello does not come in time, the image read back goes on
// again the same way and the answer is `rolled back`; if that fails too, `rollback failed` with the
// file to flash by hand. Every step's I/O is injected (the bridge's port handover, the programmer,
// the history, the image files, the clock), so the order and the refusals are tested on their own,
// and end to end with avrdude, optiboot and simavr.
import { createHash } from 'node:crypto'
import type { ImageIdentity } from '../../bridge/flash/identity.ts'
import type { BridgeStats, HandoverResult } from '../../bridge/types.ts'
import { type Failure, fail, type Result } from '../../errors/codes.ts'
import type { Log } from '../log.ts'
import { type FlashHistory, type FlashOutcome, type FlashRecord, newFlashId } from './history.ts'
import type { ImageStore } from './images.ts'
import { type HelloOutcome, type HelloSource, watchHello } from './wait-hello.ts'
import { errorText } from '../../errors/text.ts'

/** The largest image accepted, as Intel HEX text: an ATmega2560's 256 KiB is about 720 KB of it. */
export const HEX_TEXT_MAX = 1024 * 1024

export type FlashPhase = 'releasing' | 'reading' | 'writing' | 'verifying' | 'reclaiming' | 'waiting'

export type FlashEvent =
  | { kind: 'phase'; id: string; board: string; phase: FlashPhase; rollback: boolean; percent: number | null }
  | {
      kind: 'done'
      id: string
      board: string
      outcome: FlashOutcome
      error: string | null
      record: FlashRecord
    }

/** What the programmer (avrdude through the board's bootloader) is asked to do. */
export interface ProgramRequest<P> {
  board: string
  /** The serial port the bridge handed over. */
  port: string
  profile: P
  /** `read`: the flash into `path` (Intel HEX); `write`: `path` onto the flash, then verify it. */
  op: 'read' | 'write'
  path: string
  onProgress(p: { phase: 'reading' | 'writing' | 'verifying'; percent: number }): void
}

/** A failure keeps the programmer's code (avrdude's: bridge/flash/avrdude.ts) and the phase it failed in. */
export type ProgramResult = { ok: true } | (Failure & { phase?: string })

export interface FlashBridge extends HelloSource {
  release(board: string): Promise<HandoverResult>
  reclaim(board: string): Promise<HandoverResult>
}

export interface ParsedImage {
  bytes: Uint8Array
}

export interface FlasherDeps<P> {
  /** Every configured board (a board missing here is a 404). */
  boards: readonly string[]
  /** The board's flash profile from hub.toml, or null when it has none. */
  profile(board: string): P | null
  /** null when the hub has no bridge (no `[[boards]]`). */
  bridge: FlashBridge | null
  program(r: ProgramRequest<P>): Promise<ProgramResult>
  /**
   * Restarts the board once its port is back, so that its hello is heard (a reset wired to a
   * command: the open itself resets a board only through DTR). Absent or a no-op for DTR boards.
   */
  restart?(board: string, profile: P): Promise<void>
  /** The image's bytes from address 0; `board`: whose profile bounds the image (below its bootloader). */
  parseImage(text: string, board: string): Result<{ value: ParsedImage }>
  identity(bytes: Uint8Array): ImageIdentity | undefined
  /**
   * Makes the image just read back (at `path`) what a rollback writes and a person flashes by hand:
   * only what a flash may change (the application), never the bootloader's own pages. Returns the
   * identity that image carries, if any: the firmware a rollback waits for.
   */
  keepPrevious(board: string, path: string, profile: P): Promise<ImageIdentity | undefined>
  history: FlashHistory
  images: ImageStore
  helloTimeoutMs: number
  now(): number
  log: Log
  /** Every event of every flash (the console's live page). */
  onEvent?(e: FlashEvent): void
}

export interface FlashRequest {
  board: string
  /** The image, Intel HEX text. */
  hex: string
  downgrade: boolean
  who: string
  via: FlashRecord['via']
}

export type RefusalCode = 'unknown_board' | 'no_profile' | 'bad_image' | 'busy' | 'downgrade' | 'closed'

/** The HTTP status of each refusal (the local API and the console answer with these). */
export const REFUSAL_STATUS: Record<RefusalCode, number> = {
  unknown_board: 404,
  no_profile: 400,
  bad_image: 400,
  busy: 409,
  downgrade: 409,
  closed: 503,
}

export interface FlashResult {
  id: string
  board: string
  outcome: Exclude<FlashOutcome, 'started'>
  error: string | null
  record: FlashRecord
}

/** A flash refused before anything is touched: its code and status are the local API's (REFUSAL_STATUS). */
export type FlashRefusal = { ok: false; code: RefusalCode; status: number; error: string }

export type Begun =
  | { ok: true; id: string; identity: ImageIdentity | null; sha256: string; done: Promise<FlashResult> }
  | FlashRefusal

/** What an image will do to a board, checked before anything is touched. */
export interface FlashPlan {
  board: string
  sha256: string
  size: number
  identity: ImageIdentity | null
  /** What the board said in its last hello. */
  from: { fw: string | null; proto: number | null }
}

export interface Flasher {
  /** Checks the request (answered at once when refused) and starts the flash. */
  begin(req: FlashRequest, listener?: (e: FlashEvent) => void): Begun
  /** The checks of `begin` alone: what the image is and what it would replace (the console's confirmation). */
  plan(req: Omit<FlashRequest, 'who' | 'via'>): { ok: true; plan: FlashPlan } | FlashRefusal
  /** The latest event of the board's flash under way, or null. */
  current(board: string): Extract<FlashEvent, { kind: 'phase' }> | null
  history(board: string | null, limit?: number): Promise<FlashRecord[]>
  /** Waits for the flashes under way (a half-written board is worse than a late stop). */
  close(): Promise<void>
}

interface Running {
  id: string
  done: Promise<FlashResult>
  last: Extract<FlashEvent, { kind: 'phase' }> | null
}

function refuse(code: RefusalCode, error: string): FlashRefusal {
  return { ok: false, code, status: REFUSAL_STATUS[code], error }
}

export function createFlasher<P>(deps: FlasherDeps<P>): Flasher {
  const { log } = deps
  const running = new Map<string, Running>()
  let closed = false

  function lastHello(stats: BridgeStats | null, board: string): { fw: string | null; proto: number | null } {
    const s = stats?.boards[board] as { fw?: string; proto?: number } | undefined
    return { fw: s?.fw ?? null, proto: typeof s?.proto === 'number' ? s.proto : s?.fw ? 1 : null }
  }

  function plan(req: Omit<FlashRequest, 'who' | 'via'>): ReturnType<Flasher['plan']> {
    const { board } = req
    if (closed) return refuse('closed', 'the hub is stopping')
    if (!deps.boards.includes(board) || !deps.bridge)
      return refuse(
        'unknown_board',
        `unknown board "${board}" (configured: ${deps.boards.join(', ') || 'none'})`,
      )
    if (deps.profile(board) === null)
      return refuse(
        'no_profile',
        `board ${board} has no flash profile: set flash = "uno" (or a table) in its [[boards]] entry in hub.toml (hub/README.md, "Board firmware")`,
      )
    if (running.has(board))
      return refuse('busy', `board ${board} is being flashed already; wait for that flash to end`)
    if (req.hex.length > HEX_TEXT_MAX)
      return refuse(
        'bad_image',
        `image: ${req.hex.length} bytes of Intel HEX, more than the ${HEX_TEXT_MAX} accepted`,
      )
    const parsed = deps.parseImage(req.hex, board)
    if (!parsed.ok) return refuse('bad_image', `image: ${parsed.error}`)
    const bytes = parsed.value.bytes
    if (bytes.length === 0) return refuse('bad_image', 'image: holds no program bytes')
    const identity = deps.identity(bytes) ?? null
    const from = lastHello(deps.bridge.stats(), board)
    if (identity && from.proto !== null && identity.proto < from.proto && !req.downgrade)
      return refuse(
        'downgrade',
        `image ${identity.name}/${identity.version} speaks line protocol ${identity.proto}, older than the ${from.proto} of ${from.fw ?? 'the firmware'} on ${board}: flash it anyway with downgrade (svc board flash --downgrade)`,
      )
    return {
      ok: true,
      plan: {
        board,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
        identity,
        from,
      },
    }
  }

  async function run(
    req: FlashRequest,
    p: FlashPlan,
    id: string,
    emit: (e: FlashEvent) => void,
  ): Promise<FlashResult> {
    const { board } = req
    const bridge = deps.bridge as FlashBridge
    const profile = deps.profile(board) as P
    const expect = p.identity ? `${p.identity.name}/${p.identity.version}` : null
    const record: FlashRecord = {
      id,
      board,
      who: req.who,
      via: req.via,
      sha256: p.sha256,
      size: p.size,
      from: p.from.fw,
      to: expect,
      proto: p.identity?.proto ?? null,
      downgrade: req.downgrade,
      outcome: 'started',
      started: new Date(deps.now()).toISOString(),
      finished: null,
      error: null,
      previous: null,
    }
    const phase = (ph: FlashPhase, rollback: boolean, percent: number | null = null): void =>
      emit({ kind: 'phase', id, board, phase: ph, rollback, percent })
    const finish = async (outcome: FlashResult['outcome'], error: string | null): Promise<FlashResult> => {
      record.outcome = outcome
      record.error = error
      record.finished = new Date(deps.now()).toISOString()
      await deps.history
        .append(record)
        .catch((err: unknown) => log.error({ board, id, err: errorText(err) }, 'flash history not written'))
      await deps.images
        .prune(board)
        .catch((err: unknown) => log.warn({ board, err: errorText(err) }, 'old firmware images not removed'))
      const line = {
        board,
        who: req.who,
        via: req.via,
        sha256: p.sha256,
        size: p.size,
        from: record.from,
        to: record.to,
        outcome,
        error,
        ms: Date.parse(record.finished) - Date.parse(record.started),
      }
      if (outcome === 'flashed') log.info(line, `board flash: ${outcome}`)
      else log.error(line, `board flash: ${outcome}`)
      emit({ kind: 'done', id, board, outcome, error, record: { ...record } })
      return { id, board, outcome, error, record: { ...record } }
    }
    const program = (op: 'read' | 'write', path: string, port: string, rollback: boolean) =>
      deps.program({
        board,
        port,
        profile,
        op,
        path,
        onProgress: (x) => phase(x.phase, rollback, x.percent),
      })
    // The port back to the bridge, then (unless `want` is false) the firmware's word that it runs.
    const comeBack = async (want: string | null | false, rollback: boolean): Promise<HelloOutcome> => {
      const watch = want === false ? null : watchHello(bridge, board)
      phase('reclaiming', rollback)
      const back = await bridge.reclaim(board)
      if (!back.ok) {
        watch?.cancel()
        return fail('UNAVAILABLE', `the port could not be taken back: ${back.error}`)
      }
      if (!watch) return { ok: true, fw: null, proto: null, by: 'hello' }
      if (deps.restart) {
        // Only a board that has not said hello by the time it answers the bridge's first ping, and
        // not before it answers: a reset in the middle of a line leaves half of it to spoil the
        // next one, the hello. (A hello may have come by itself: the new firmware printed it when
        // the programmer let go, and the port kept it.)
        const until = Date.now() + Math.min(3000, deps.helloTimeoutMs / 2)
        while (Date.now() < until && !watch.pending() && bridge.stats().boards[board]?.state !== 'online')
          await new Promise((r) => setTimeout(r, 50))
        if (!watch.pending()) await deps.restart(board, profile)
      }
      phase('waiting', rollback)
      return watch.until(want as string | null, deps.helloTimeoutMs)
    }

    log.info(
      { board, who: req.who, via: req.via, sha256: p.sha256, size: p.size, from: p.from.fw, to: expect, id },
      'board flash: starting',
    )
    try {
      await deps.history.append({ ...record })
    } catch (err) {
      return finish(
        'failed',
        `the flash history could not be written (${errorText(err)}); nothing was touched`,
      )
    }
    let files: Awaited<ReturnType<ImageStore['prepare']>>
    try {
      files = await deps.images.prepare(board, deps.now())
      await deps.images.write(files.image, req.hex)
    } catch (err) {
      return finish('failed', `the image could not be stored (${errorText(err)}); nothing was touched`)
    }

    phase('releasing', false)
    const released = await bridge.release(board)
    if (!released.ok) return finish('failed', `${released.error}; nothing was touched`)

    phase('reading', false, 0)
    const read = await program('read', files.previous, released.port, false)
    if (!read.ok) {
      const back = await comeBack(false, false)
      return finish(
        'failed',
        `reading the current image failed (${read.error}); nothing was written${back.ok ? '' : `, and ${back.error}`}`,
      )
    }
    // The firmware a rollback brings back: the one in the image read, else the one the board named.
    let previousFw: string | null = p.from.fw
    try {
      const id = await deps.keepPrevious(board, files.previous, profile)
      if (id) previousFw = `${id.name}/${id.version}`
    } catch (err) {
      await comeBack(false, false)
      return finish(
        'failed',
        `the image read back could not be kept (${errorText(err)}); nothing was written`,
      )
    }
    record.previous = files.previous

    phase('writing', false, 0)
    const written = await program('write', files.image, released.port, false)
    let why: string
    if (written.ok) {
      const hello = await comeBack(expect, false)
      if (hello.ok) return finish('flashed', null)
      why = hello.error
    } else {
      why = `${written.phase === 'verifying' ? 'verifying' : 'writing'} the image failed: ${written.error}`
    }

    // Roll back: the image read before writing goes on again, the same way.
    log.warn(
      { board, id, why, previous: files.previous },
      'board flash: rolling back to the image read before',
    )
    let port = released.port
    if (written.ok) {
      phase('releasing', true)
      const again = await bridge.release(board)
      if (!again.ok)
        return finish(
          'rollback failed',
          `${why}; the port could not be taken for the rollback: ${again.error}`,
        )
      port = again.port
    }
    const byHand = `the image read before the flash is ${files.previous}: flash it again with \`svc board flash ${board} ${files.previous}\``
    phase('writing', true, 0)
    const restored = await program('write', files.previous, port, true)
    if (!restored.ok) {
      await comeBack(false, true)
      return finish(
        'rollback failed',
        `${why}; writing the previous image back failed too (${restored.error}); ${byHand}`,
      )
    }
    const old = await comeBack(previousFw, true)
    // A board that named no firmware before the flash is not expected to name one now.
    if (!old.ok && previousFw === null)
      return finish(
        'rolled back',
        `${why}; the board said no hello before the flash either, so none was awaited after the rollback`,
      )
    if (!old.ok)
      return finish(
        'rollback failed',
        `${why}; the previous image is written back but the board did not come back (${old.error}); ${byHand}`,
      )
    return finish('rolled back', why)
  }

  return {
    plan,
    begin(req, listener) {
      const checked = plan(req)
      if (!checked.ok) {
        log.warn(
          { board: req.board, who: req.who, via: req.via, error: checked.error, code: checked.code },
          'board flash refused',
        )
        return checked
      }
      const id = newFlashId(deps.now())
      const entry: Running = { id, done: Promise.resolve() as never, last: null }
      const emit = (e: FlashEvent): void => {
        // Done: no phase is current any more, before anyone is told (the console refetches the
        // page on this event and must not show the last phase of a flash that has ended).
        entry.last = e.kind === 'phase' ? e : null
        for (const fn of [listener, deps.onEvent]) {
          try {
            fn?.(e)
          } catch (err) {
            log.warn({ board: req.board, err: errorText(err) }, 'flash progress listener failed')
          }
        }
      }
      entry.done = run(req, checked.plan, id, emit)
        .catch(async (err: unknown): Promise<FlashResult> => {
          // A bug, not a board: say so, and give the port back if it is still handed over.
          log.error({ board: req.board, id, err: errorText(err) }, 'board flash crashed')
          await deps.bridge?.reclaim(req.board).catch(() => undefined)
          const now = new Date(deps.now()).toISOString()
          const record: FlashRecord = {
            id,
            board: req.board,
            who: req.who,
            via: req.via,
            sha256: checked.plan.sha256,
            size: checked.plan.size,
            from: checked.plan.from.fw,
            to: checked.plan.identity
              ? `${checked.plan.identity.name}/${checked.plan.identity.version}`
              : null,
            proto: checked.plan.identity?.proto ?? null,
            downgrade: req.downgrade,
            outcome: 'failed',
            started: now,
            finished: now,
            error: `internal error: ${errorText(err)}`,
            previous: null,
          }
          await deps.history.append(record).catch(() => undefined)
          emit({ kind: 'done', id, board: req.board, outcome: 'failed', error: record.error, record })
          return { id, board: req.board, outcome: 'failed', error: record.error, record }
        })
        .finally(() => running.delete(req.board))
      running.set(req.board, entry)
      return { ok: true, id, identity: checked.plan.identity, sha256: checked.plan.sha256, done: entry.done }
    },
    current: (board) => running.get(board)?.last ?? null,
    async history(board, limit) {
      const all = await deps.history.list(board, limit)
      // `started` with no flash of that id under way: the hub stopped in the middle of it.
      const live = new Set([...running.values()].map((r) => r.id))
      return all.map((r) =>
        r.outcome === 'started' && !live.has(r.id)
          ? { ...r, error: r.error ?? 'interrupted: the hub stopped during this flash' }
          : r,
      )
    },
    async close() {
      closed = true
      const under = [...running.values()].map((r) => r.done)
      if (under.length > 0)
        log.warn({ flashes: under.length }, 'waiting for the board flashes under way to end')
      await Promise.allSettled(under)
    },
  }
}
