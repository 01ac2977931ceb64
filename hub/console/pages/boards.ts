// GET /boards: each configured board, online or offline and since when, its last event and the
// bridge's counters (as `svc board status`), a feed of events as they arrive (server-sent events,
// static/boards.js), and a form that sends one command (POST /boards/send, as `svc board send`
// and the local API's POST /boards/:board/send: the same checks, the same answers).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { SUPPORTED_PROTOCOLS, speaksProtocol, splitFirmware } from '../../../bridge/codec/protocol.ts'
import type { BoardStats, BridgeStats, SendFailure, SendResult } from '../../../bridge/types.ts'
import { ERROR_STATUS, type ErrorCode, type Failure, fail, statusOf } from '../../../errors/codes.ts'
import { type Html, html } from '../../../web/html.ts'
import { SEND_STATUS } from '../../api/boards.ts'
import { type ConsoleBoard, type ConsoleContext, csrfField } from '../context.ts'
import { parseJsonBox } from '../views/json-where.ts'
import { when } from '../format.ts'

/** bridge/codec/messages.ts CommandName: what a board's line protocol accepts as a command. */
const CMD_RE = /^[a-z][a-z0-9_]{0,31}$/
const ARGS_MAX = 16 * 1024
/** Events shown in the feed when the page loads; boards.js keeps the newest FEED_MAX. */
const FEED_MAX = 50

/** The counters a person checks first, in `svc board status`'s order. */
const COUNTERS: [keyof BoardStats, string][] = [
  ['lines', 'lines'],
  ['events', 'events'],
  ['published', 'published'],
  ['garbage', 'garbage'],
  ['oversized', 'overlong'],
  ['dropped', 'dropped'],
  ['reconnects', 'reconnects'],
  ['commands', 'commands'],
  ['timeouts', 'timeouts'],
]

/** ` · firmware svc-companion 0.2.0 · protocol 1`, from the board's last hello; the protocol flagged when the hub does not speak it. */
function firmwareLine(s: BoardStats): Html {
  if (!s.fw) return html``
  const split = splitFirmware(s.fw)
  const proto =
    s.proto === undefined
      ? ''
      : speaksProtocol(s.proto)
        ? html` · protocol <span data-proto="${String(s.proto)}">${String(s.proto)}</span>`
        : html` · protocol <span data-proto="${String(s.proto)}">${String(s.proto)}</span> <span class="tag">this hub speaks ${SUPPORTED_PROTOCOLS.join(', ')}</span>`
  return html` · firmware <code data-firmware="${split?.name ?? s.fw}">${split?.name ?? s.fw}</code>${split ? html` <span data-version="${split.version}">${split.version}</span>` : ''}${proto}`
}

function boardCard(b: ConsoleBoard, s: BoardStats | undefined, now: number): Html {
  return html`<li class="card" data-board="${b.name}" data-availability="${b.availability}">
<h2><span class="dot ${b.availability}" aria-hidden="true"></span> ${b.name}</h2>
<p><span class="state-${b.availability}">${b.availability}</span>${b.since !== null ? html` since ${when(b.since, now)}` : ''}${s && s.state !== b.availability ? html` <span class="tag">${s.state}</span>` : ''}</p>
<p class="muted">${s ? html`${s.kind}${firmwareLine(s)}` : 'no counters yet'}</p>
<p>last event: ${b.lastEvent ? html`<code>${b.lastEvent.signal}</code> <code class="payload">${b.lastEvent.text}</code> ${when(b.lastEvent.at, now)}` : html`<span class="muted">none since the hub started</span>`}</p>
${
  s
    ? html`<p class="counters muted">${COUNTERS.map(([k, label], i) => html`${i ? ' · ' : ''}<span>${label}\u00a0<strong data-counter="${k}">${String(s[k])}</strong></span>`)}</p>`
    : ''
}
${s?.kind === 'serial' ? html`<p><a href="/boards/${b.name}/flash">Firmware and flash history</a></p>` : ''}
</li>`
}

function queueLine(q: BridgeStats['queue'] | null | undefined): Html {
  if (!q) return html``
  return html`<p class="muted">Publish queue: ${q.pending} pending, ${q.inflight} in flight, ${q.delivered} delivered, ${q.dropped} dropped.</p>`
}

interface SendForm {
  board: string
  cmd: string
  args: string
  /**
   * The answer to show, or why the command was not sent: refused here (an ErrorCode), or by the
   * bridge (its own wire code, bridge/README.md); the page answers the code's status.
   */
  outcome:
    | { ok: true; board: string; cmd: string; result: unknown }
    | { ok: false; code: ErrorCode | SendFailure; error: string }
    | null
}

const isErrorCode = (code: ErrorCode | SendFailure): code is ErrorCode => Object.hasOwn(ERROR_STATUS, code)

function page(ctx: ConsoleContext, req: FastifyRequest, now: number, form: SendForm): Html {
  const boards = ctx.boards.list()
  const stats = ctx.boards.stats()
  const feed = boards
    .flatMap((b) => (b.lastEvent ? [{ board: b.name, ...b.lastEvent }] : []))
    .sort((a, b) => b.at - a.at)
    .slice(0, FEED_MAX)
  if (boards.length === 0)
    return html`<h1>Boards</h1><p class="muted">No boards are configured: add a <code>[[boards]]</code> section to hub.toml (hub/README.md, Boards) and restart the hub.</p>`
  return html`<h1>Boards</h1>
<section id="boards-list" data-live="board board-event" aria-label="Boards">
<ul class="cards">${boards.map((b) => boardCard(b, stats?.boards[b.name], now))}</ul>
${queueLine(stats?.queue)}
</section>
<h2 id="send-h">Send a command</h2>
<form method="post" action="/boards/send#send-h" class="stack" aria-labelledby="send-h">
${csrfField(req)}
${
  form.outcome === null
    ? ''
    : form.outcome.ok
      ? html`<p class="ok" role="status" id="send-outcome" data-ok="true">${form.outcome.board} answered <code>${form.outcome.cmd}</code>: <code>${JSON.stringify(form.outcome.result)}</code></p>`
      : html`<p class="error" role="alert" id="send-outcome" data-ok="false">${form.outcome.error}</p>`
}
<label>Board <select name="board">${boards.map((b) => html`<option value="${b.name}"${b.name === form.board ? html` selected` : ''}>${b.name} (${b.availability})</option>`)}</select></label>
<label>Command <input name="cmd" value="${form.cmd}" required pattern="[a-z][a-z0-9_]{0,31}" autocapitalize="none" autocomplete="off" spellcheck="false" placeholder="gpio_write"></label>
<label>Arguments (JSON) <textarea name="args" rows="2" spellcheck="false" autocomplete="off">${form.args}</textarea></label>
<div class="row"><button type="submit">Send</button></div>
</form>
<h2 id="feed-h">Events as they arrive</h2>
<p class="muted" id="feed-status">The newest first; the feed follows the hub while this page is open.</p>
<ul id="board-events" class="boards events" aria-labelledby="feed-h" data-max="${FEED_MAX}">${feed.map(
    (e) =>
      html`<li><time datetime="${new Date(e.at).toISOString()}">${new Date(e.at).toISOString().slice(11, 19)}Z</time> <strong>${e.board}</strong> <code>${e.signal}</code> <code class="payload">${e.text}</code></li>`,
  )}</ul>
<script type="module" src="/assets/boards.js"></script>`
}

/** Why a command cannot be sent as the form gives it, or what to send. Pure. */
export function checkSend(
  boards: readonly string[],
  body: Record<string, unknown>,
): { ok: true; board: string; cmd: string; args: unknown } | Failure {
  const board = typeof body.board === 'string' ? body.board : ''
  const cmd = typeof body.cmd === 'string' ? body.cmd.trim() : ''
  if (!boards.includes(board))
    return fail('NOT_FOUND', `unknown board "${board}": this hub has ${boards.join(', ') || 'no boards'}`)
  if (!CMD_RE.test(cmd))
    return fail(
      'BAD_INPUT',
      `command: must be a lowercase name like gpio_write ([a-z][a-z0-9_]{0,31}), got "${cmd}"`,
    )
  if (body.args !== undefined && typeof body.args !== 'string')
    return fail('BAD_INPUT', 'arguments: expected the text of the arguments box (JSON as a string)')
  const args = parseJsonBox(body.args ?? '', 'arguments', ARGS_MAX)
  if (!args.ok) return args
  return { ok: true, board, cmd, args: args.value }
}

export function register(app: FastifyInstance, ctx: ConsoleContext): void {
  const show = (req: FastifyRequest, reply: FastifyReply, form: SendForm): FastifyReply => {
    const o = form.outcome
    const status = !o || o.ok ? 200 : isErrorCode(o.code) ? statusOf(o.code) : SEND_STATUS[o.code]
    return ctx.render(req, reply, {
      title: 'Boards',
      nav: 'boards',
      body: page(ctx, req, Date.now(), form),
      status,
    })
  }

  app.get('/boards', async (req, reply) => {
    const first = ctx.boards.list()[0]?.name ?? ''
    return show(req, reply, { board: first, cmd: '', args: '{}', outcome: null })
  })

  app.post('/boards/send', async (req, reply) => {
    const body = (req.body ?? {}) as Record<string, unknown>
    const form = {
      board: typeof body.board === 'string' ? body.board : '',
      cmd: typeof body.cmd === 'string' ? body.cmd : '',
      args: typeof body.args === 'string' ? body.args : '',
    }
    const c = checkSend(
      ctx.boards.list().map((b) => b.name),
      body,
    )
    if (!c.ok) return show(req, reply, { ...form, outcome: { ...c, error: `${c.error}; nothing was sent` } })
    const r: SendResult = await ctx.boards.send(c.board, c.cmd, c.args as never)
    ctx.log.info({ board: c.board, cmd: c.cmd, ok: r.ok }, 'console: board command')
    if (r.ok)
      return show(req, reply, {
        ...form,
        outcome: { ok: true, board: c.board, cmd: c.cmd, result: r.result },
      })
    return show(req, reply, {
      ...form,
      outcome: {
        ok: false,
        code: r.code ?? 'board_error',
        error: `${c.board} did not run ${c.cmd}: ${r.error}`,
      },
    })
  })
}
