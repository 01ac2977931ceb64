// GET /boards/<board>/flash: a board's firmware (what it runs, the flash under way, live) and its
// flash history; the owner uploads an image (Intel HEX), sees what it is and what it replaces on
// a confirmation page, and only then flashes it (POST …/flash, then POST …/flash/confirm; both
// are signed-in posts with the session's CSRF token, as every console form). The upload waits in
// memory for its confirmation, bound to the session that made it, for 10 minutes at most.
import { randomBytes } from 'node:crypto'
import multipart, { type MultipartFile } from '@fastify/multipart'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { BoardStats } from '../../../bridge/types.ts'
import { type ErrorCode, fail, type Result, statusOf } from '../../../errors/codes.ts'
import { type Html, html } from '../../../web/html.ts'
import { type FlashPlan, HEX_TEXT_MAX } from '../../flash/flasher.ts'
import type { FlashRecord } from '../../flash/history.ts'
import { type ConsoleContext, csrfField } from '../context.ts'
import { duration, when } from '../format.ts'

const PENDING_MS = 10 * 60_000
/** Uploads waiting for confirmation at once (each up to HEX_TEXT_MAX): the oldest goes first. */
const PENDING_MAX = 4
const HISTORY_ROWS = 20

interface Pending {
  board: string
  hex: string
  csrf: string
  at: number
}

/** What the upload field carried: the file's text, or why there is none. */
type Upload = Result<{ text: string }>

/** A refusal as the page shows it, above the form, with the status it answers. */
interface Refusal {
  text: string
  status: number
}

const refusal = (code: ErrorCode, text: string): Refusal => ({ text, status: statusOf(code) })

function outcomeTag(r: FlashRecord, live: boolean): Html {
  const o = r.outcome === 'started' ? (live ? 'in progress' : 'interrupted') : r.outcome
  const cls = o === 'flashed' ? 'completed' : o === 'in progress' ? 'running' : 'failed'
  return html`<span class="tag s-${cls}">${o}</span>`
}

function historyTable(rows: FlashRecord[], current: string | null, now: number): Html {
  if (rows.length === 0) return html`<p class="muted">No flashes of this board yet.</p>`
  return html`<div class="table-wrap"><table class="flashes"><thead><tr><th>Started</th><th>Outcome</th><th>From</th><th>To</th><th class="hide-narrow">Image</th><th class="hide-narrow">Who</th><th class="hide-narrow">Took</th></tr></thead>
<tbody>${rows.map(
    (r) =>
      html`<tr data-flash="${r.id}"><td>${when(Date.parse(r.started), now)}</td><td>${outcomeTag(r, r.id === current)}${r.error ? html`<br><span class="muted">${r.error}</span>` : ''}</td><td><code>${r.from ?? '-'}</code></td><td><code>${r.to ?? '-'}</code>${r.downgrade ? html` <span class="tag">downgrade</span>` : ''}</td><td class="hide-narrow"><code title="${r.sha256}">${r.sha256.slice(0, 12)}</code> ${r.size} B</td><td class="hide-narrow">${r.who}</td><td class="hide-narrow">${r.finished ? duration(Date.parse(r.finished) - Date.parse(r.started)) : ''}</td></tr>`,
  )}</tbody></table></div>`
}

function firmwareLine(s: BoardStats | undefined): Html {
  if (!s) return html`<p class="muted">No counters yet.</p>`
  const proto = (s as { proto?: number }).proto
  return html`<p>State <span class="tag">${s.state}</span> · firmware ${s.fw ? html`<code>${s.fw}</code>` : html`<span class="muted">not named yet</span>`}${proto !== undefined ? html` · line protocol ${proto}` : ''}</p>`
}

export async function register(app: FastifyInstance, ctx: ConsoleContext): Promise<void> {
  const pending = new Map<string, Pending>()
  const sweep = (now: number): void => {
    for (const [k, p] of pending) if (now - p.at > PENDING_MS) pending.delete(k)
    while (pending.size >= PENDING_MAX) pending.delete(pending.keys().next().value as string)
  }
  const known = (board: string): boolean => ctx.boards.list().some((b) => b.name === board)

  async function page(
    req: FastifyRequest,
    reply: FastifyReply,
    board: string,
    refused: Refusal | null,
  ): Promise<FastifyReply> {
    const now = Date.now()
    const flash = ctx.flash ?? null
    const stats = ctx.boards.stats()?.boards[board]
    const current = flash?.flasher.current(board) ?? null
    const rows = flash ? await flash.flasher.history(board, HISTORY_ROWS) : []
    const running = rows.find((r) => r.outcome === 'started' && current?.id === r.id)?.id ?? null
    const can = flash?.hasProfile(board) ?? false
    const body = html`<h1>Firmware of ${board}</h1>
<p><a href="/boards">All boards</a></p>
${refused ? html`<p class="error" role="alert" id="flash-notice">${refused.text}</p>` : ''}
<section id="flash-status" data-live="flash board" aria-label="Firmware now">
${firmwareLine(stats)}
${
  current
    ? html`<p id="flash-progress" data-phase="${current.phase}">Flashing: ${current.rollback ? 'rolling back, ' : ''}${current.phase}${current.percent !== null ? html` <progress max="100" value="${current.percent}">${current.percent}%</progress> ${current.percent}%` : ''}</p>`
    : ''
}
</section>
<h2 id="upload-h">Flash an image</h2>
${
  !can
    ? html`<p class="muted">This board has no flash profile: add <code>flash = "uno"</code> (or a table) to its <code>[[boards]]</code> entry in hub.toml and restart the hub (hub/README.md, Board firmware).</p>`
    : html`<form method="post" action="/boards/${board}/flash" enctype="multipart/form-data" class="stack" aria-labelledby="upload-h">
${csrfField(req)}
<label>Image (Intel HEX, as avrdude and the Arduino tools write it) <input type="file" name="image" accept=".hex,.ihex,text/plain" required></label>
<div class="row"><button type="submit">Check the image</button></div>
<p class="muted">Nothing is written yet: the next page shows what the image is and what it replaces.</p>
</form>`
}
<h2 id="history-h">Flash history</h2>
<section id="flash-history" data-live="flash" aria-labelledby="history-h">${historyTable(rows, running, now)}</section>`
    return ctx.render(req, reply, {
      title: `Firmware of ${board}`,
      nav: 'boards',
      body,
      status: refused?.status ?? 200,
    })
  }

  function confirmPage(
    req: FastifyRequest,
    reply: FastifyReply,
    plan: FlashPlan,
    token: string,
    downgrade: boolean,
  ) {
    const id = plan.identity
    const timeout = ctx.flash ? duration(ctx.flash.helloTimeoutMs) : ''
    const body = html`<h1>Flash ${plan.board}?</h1>
<div class="table-wrap"><table class="flash-plan"><tbody>
<tr><th>Board runs now</th><td><code>${plan.from.fw ?? 'firmware that named itself in no hello'}</code>${plan.from.proto !== null ? html` (line protocol ${plan.from.proto})` : ''}</td></tr>
<tr><th>The image holds</th><td>${id ? html`<code>${id.name}/${id.version}</code> (line protocol ${id.proto})` : html`<span class="muted">no svc firmware identity: any hello will do</span>`}</td></tr>
<tr><th>SHA-256</th><td><code>${plan.sha256}</code></td></tr>
<tr><th>Size</th><td>${plan.size} bytes of program</td></tr>
</tbody></table></div>
${downgrade ? html`<p class="error" role="alert">This image speaks an older line protocol than the firmware on the board. Flash it only if you mean to go back.</p>` : ''}
<p>The board's events stop while it is flashed. The hub first reads back and keeps the image the board runs now; if the new firmware does not say hello within ${timeout}, that image goes back on.</p>
<form method="post" action="/boards/${plan.board}/flash/confirm" class="stack">
${csrfField(req)}
<input type="hidden" name="upload" value="${token}">
${downgrade ? html`<label><input type="checkbox" name="downgrade" value="1" required> Flash the older protocol anyway</label>` : ''}
<div class="row"><button type="submit">Flash now</button> <a href="/boards/${plan.board}/flash">Cancel</a></div>
</form>`
    return ctx.render(req, reply, { title: `Flash ${plan.board}?`, nav: 'boards', body })
  }

  app.get<{ Params: { board: string } }>('/boards/:board/flash', async (req, reply) => {
    const { board } = req.params
    if (!known(board)) return reply.callNotFound()
    return page(req, reply, board, null)
  })

  app.post<{ Params: { board: string } }>('/boards/:board/flash/confirm', async (req, reply) => {
    const { board } = req.params
    if (!known(board)) return reply.callNotFound()
    const body = (req.body ?? {}) as Record<string, unknown>
    sweep(Date.now())
    const token = typeof body.upload === 'string' ? body.upload : ''
    const p = pending.get(token)
    if (!p || p.board !== board || p.csrf !== req.consoleSession?.csrf)
      return page(
        req,
        reply,
        board,
        refusal(
          'CONFLICT',
          'That upload is gone (older than 10 minutes, or from another sign-in): upload the image again; nothing was flashed',
        ),
      )
    if (!ctx.flash) return page(req, reply, board, refusal('NOT_FOUND', 'this hub cannot flash boards'))
    const begun = ctx.flash.flasher.begin({
      board,
      hex: p.hex,
      downgrade: body.downgrade === '1',
      who: 'owner (console)',
      via: 'console',
    })
    if (!begun.ok)
      return page(req, reply, board, { text: `${begun.error}; nothing was flashed`, status: begun.status })
    pending.delete(token)
    return reply.redirect(`/boards/${board}/flash`, 303)
  })

  // Multipart (the file field) only on the upload route: its own scope, its own limits.
  await app.register(async (scope) => {
    await scope.register(multipart, {
      attachFieldsToBody: 'keyValues',
      throwFileSizeLimit: false,
      limits: { fileSize: HEX_TEXT_MAX, files: 1, fields: 4, parts: 6, fieldSize: 1024 },
      async onFile(part: MultipartFile) {
        const chunks: Buffer[] = []
        for await (const c of part.file) chunks.push(c as Buffer)
        const upload: Upload = part.file.truncated
          ? fail('TOO_LARGE', `image: larger than the ${HEX_TEXT_MAX} bytes of Intel HEX the hub takes`)
          : { ok: true, text: Buffer.concat(chunks).toString('utf8') }
        ;(part as unknown as { value: Upload }).value = upload
      },
    })
    scope.post<{ Params: { board: string } }>('/boards/:board/flash', async (req, reply) => {
      const { board } = req.params
      if (!known(board)) return reply.callNotFound()
      if (!ctx.flash) return page(req, reply, board, refusal('NOT_FOUND', 'this hub cannot flash boards'))
      const body = (req.body ?? {}) as Record<string, unknown>
      const up = body.image as Upload | undefined
      if (!up || typeof up !== 'object' || !('ok' in up))
        return page(req, reply, board, refusal('BAD_INPUT', 'image: choose a file to upload'))
      if (!up.ok) return page(req, reply, board, refusal(up.code, up.error))
      let planned = ctx.flash.flasher.plan({ board, hex: up.text, downgrade: false })
      const downgrade = !planned.ok && planned.code === 'downgrade'
      if (downgrade) planned = ctx.flash.flasher.plan({ board, hex: up.text, downgrade: true })
      if (!planned.ok)
        return page(req, reply, board, {
          text: `${planned.error}; nothing was flashed`,
          status: planned.status,
        })
      sweep(Date.now())
      const token = randomBytes(16).toString('hex')
      pending.set(token, { board, hex: up.text, csrf: req.consoleSession?.csrf ?? '', at: Date.now() })
      return confirmPage(req, reply, planned.plan, token, downgrade)
    })
  })
}
