// GET /api/docs: the API reference, rendered on the server from the market's own OpenAPI document
// (GET /api/openapi.json), so it cannot drift from the routes. Plain HTML and the site's
// stylesheet: no Swagger UI bundle, nothing from another origin. Pure.
import { type Html, html } from '../../web/html.ts'

type Schema = {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  anyOf?: Schema[]
  enum?: unknown[]
  const?: unknown
  pattern?: string
  minimum?: number
  maximum?: number
  maxLength?: number
  description?: string
}
interface Operation {
  summary?: string
  tags?: string[]
  security?: Record<string, unknown>[]
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema; description?: string }[]
  requestBody?: { content?: Record<string, { schema?: Schema }> }
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>
}
export interface OpenApiDoc {
  info?: { title?: string; version?: string }
  paths?: Record<string, Record<string, Operation>>
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

/** A schema in a few words: `string`, `integer 1–100`, `"a" | "b"`, `array of object`. */
export function typeText(s: Schema | undefined, depth = 0): string {
  if (!s) return 'any'
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (s.enum) return s.enum.map((e) => JSON.stringify(e)).join(' | ')
  if (s.anyOf) return s.anyOf.map((x) => typeText(x, depth + 1)).join(' | ')
  const t = Array.isArray(s.type) ? s.type.join(' | ') : (s.type ?? 'object')
  if (t === 'array') return `array of ${depth > 2 ? '…' : typeText(s.items, depth + 1)}`
  const range =
    s.minimum !== undefined || s.maximum !== undefined ? ` ${s.minimum ?? ''}–${s.maximum ?? ''}` : ''
  return `${t}${range}`
}

function fields(s: Schema | undefined): Html {
  const props = s?.properties
  if (!props || Object.keys(props).length === 0) return html`<p class="muted">${typeText(s)}</p>`
  const req = new Set(s?.required ?? [])
  return html`<div class="scroll"><table class="api-fields"><thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Required</th></tr></thead>
<tbody>${Object.entries(props).map(
    ([k, v]) =>
      html`<tr><td><code>${k}</code></td><td>${typeText(v)}${v.properties ? html`<br><span class="muted">{ ${Object.keys(v.properties).join(', ')} }</span>` : ''}</td><td>${req.has(k) ? 'yes' : ''}</td></tr>`,
  )}</tbody></table></div>`
}

const anchor = (method: string, path: string): string =>
  `${method}-${path}`.replace(/[^a-zA-Z0-9]+/g, '-').replace(/-+$/, '')

function operation(path: string, method: string, op: Operation): Html {
  const auth = (op.security ?? []).flatMap((s) => Object.keys(s))
  const body = op.requestBody?.content
  const bodyType = body ? Object.keys(body)[0] : undefined
  return html`<section class="api-op" id="${anchor(method, path)}">
<h3><span class="method m-${method}">${method.toUpperCase()}</span> <code>${path}</code></h3>
<p>${op.summary ?? ''}${auth.length ? html` <span class="tag">auth: ${auth.join(', ')}</span>` : ''}</p>
${
  op.parameters?.length
    ? html`<h4>Parameters</h4><div class="scroll"><table class="api-fields"><thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th><th scope="col">Required</th></tr></thead><tbody>${op.parameters.map(
        (p) =>
          html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${typeText(p.schema)}</td><td>${p.required ? 'yes' : ''}</td></tr>`,
      )}</tbody></table></div>`
    : ''
}
${body && bodyType ? html`<h4>Request body <span class="muted">(${bodyType})</span></h4>${fields(body[bodyType]?.schema)}` : ''}
<h4>Responses</h4>
<ul class="plain">${Object.entries(op.responses ?? {}).map(([status, r]) => {
    const c = r.content ? Object.values(r.content)[0]?.schema : undefined
    const props = c?.properties ? Object.keys(c.properties) : []
    return html`<li><strong>${status}</strong> ${props.length ? html`<code>{ ${props.join(', ')} }</code>` : (r.description ?? '')}</li>`
  })}</ul>
</section>`
}

export function apiDocsMain(doc: OpenApiDoc): Html {
  const ops: { path: string; method: string; op: Operation }[] = []
  for (const [path, item] of Object.entries(doc.paths ?? {}))
    for (const m of METHODS) if (item[m]) ops.push({ path, method: m, op: item[m]! })
  const tags = [...new Set(ops.map((o) => o.op.tags?.[0] ?? 'other'))]
  return html`<h1>API reference</h1>
<p>${doc.info?.title ?? 'Marketplace API'}, version ${doc.info?.version ?? '1'}: every route the market serves, from its <a href="/api/openapi.json">OpenAPI 3 document</a>. Errors are <code>{ "error": "…" }</code> with an HTTP status. A browser signs in with the <code>svc_session</code> cookie; a device sends <code>Authorization: Bearer svc_…</code>.</p>
<nav aria-label="Routes" class="api-toc"><ul class="plain">${ops.map(
    (o) =>
      html`<li><a href="#${anchor(o.method, o.path)}"><span class="method m-${o.method}">${o.method.toUpperCase()}</span> <code>${o.path}</code></a></li>`,
  )}</ul></nav>
${tags.map(
  (t) =>
    html`<h2>${t}</h2>${ops.filter((o) => (o.op.tags?.[0] ?? 'other') === t).map((o) => operation(o.path, o.method, o.op))}`,
)}`
}
