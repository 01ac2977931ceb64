// GET /: the hub at a glance.
import type { FastifyInstance } from 'fastify'
import { html } from '../../../web/html.ts'
import type { ConsoleContext } from '../context.ts'

export function register(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/', async (req, reply) => {
    const boards = ctx.boards.list()
    const body = html`<h1>Overview</h1>
<section id="ov-boards" data-live="board">
<h2>Boards</h2>
${
  boards.length === 0
    ? html`<p class="muted">No boards configured.</p>`
    : html`<ul class="boards">${boards.map(
        (b) =>
          html`<li><span class="dot ${b.availability}" aria-hidden="true"></span> <strong>${b.name}</strong> <span class="state-${b.availability}">${b.availability}</span></li>`,
      )}</ul>`
}
</section>
<section id="ov-runs" data-live="run kept">
<h2>Runs</h2>
<p>${ctx.engine.pending().length} waiting for approval · ${ctx.engine.keptTriggers().length} triggers held or deferred · ${ctx.sops().length} SOPs loaded</p>
</section>`
    return ctx.render(req, reply, { title: 'Overview', nav: 'overview', body })
  })
}
