// The listing page's Preview section: the data's fields (name, JSON types, lines, min/max), the
// time range, the histogram of `action` values as a small bar chart, and the sample lines the
// seller published, each with its hashes and its own verification. Pure. Everything shown came
// from a device's data file: the summary is bounded where it is computed (listings/preview.ts)
// and every value is escaped here by html``.
import type { ListingPreview, PreviewSample } from '../listings/preview.ts'
import { type Html, html } from '../../web/html.ts'
import type { ListingSummary } from './view-types.ts'

type Verification = ListingSummary['verification']

const num = (n: number | null): string =>
  n === null ? '—' : Number.isInteger(n) ? n.toLocaleString('en') : n.toPrecision(6).replace(/\.?0+$/, '')
const when = (iso: string): string => iso.replace('T', ' ').slice(0, 16)
const short = (h: string): string => (h.length > 14 ? `${h.slice(0, 10)}…${h.slice(-4)}` : h)

/** What the listing's last verification says about one row (the first failing row is stored). */
export function rowVerdict(v: Verification, index: number): { cls: string; text: string } {
  switch (v.state) {
    case 'preview':
      return { cls: 'muted', text: 'Sample listing: not read from the chain.' }
    case 'unchecked':
      return { cls: 'muted', text: 'Not checked yet: press Verify.' }
    case 'verified':
      return { cls: 'ok', text: `Passed at block ${v.block}.` }
    case 'failed': {
      // The stored reason names the first failing row: rows before it passed.
      const m = /^row (\d+): (.*)$/s.exec(v.reason ?? '')
      if (!m) return { cls: 'muted', text: 'The listing failed its last check; press Verify for this row.' }
      const first = Number(m[1])
      if (index < first) return { cls: 'ok', text: `Passed at block ${v.block}.` }
      if (index === first) return { cls: 'bad', text: `Failed at block ${v.block}: ${m[2]}` }
      return { cls: 'muted', text: 'Not known (an earlier row failed): press Verify.' }
    }
  }
}

function histogram(p: ListingPreview): Html {
  if (p.actions.length === 0) return html`<p class="muted">The lines carry no <code>action</code> field.</p>`
  const max = Math.max(...p.actions.map((a) => a.count), p.otherActions)
  const bar = (label: string | Html, count: number) => html`<tr><th scope="row">${label}</th>
  <td class="bar"><svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true"><rect width="${((count / max) * 100).toFixed(1)}" height="10"/></svg></td>
  <td class="n">${count.toLocaleString('en')}</td></tr>`
  return html`<div class="scroll"><table class="hist">
<caption>Lines per <code>action</code></caption>
<thead><tr><th scope="col">action</th><th scope="col"><span class="sr">Share</span></th><th scope="col">Lines</th></tr></thead>
<tbody>${p.actions.map((a) => bar(html`<code>${a.value}</code>`, a.count))}${p.otherActions > 0 ? bar('other values', p.otherActions) : ''}</tbody>
</table></div>`
}

function sampleLine(s: PreviewSample, v: Verification): Html {
  const verdict = rowVerdict(v, s.index)
  return html`<li class="sample-line" data-index="${s.index}">
  <p class="sample-head"><strong>Line ${s.index + 1}</strong> · <span class="${verdict.cls}" id="sample-verdict-${s.index}">${verdict.text}</span></p>
  <pre><code>${s.line}</code></pre>
  ${s.truncated ? html`<p class="muted">Cut for display: the line is ${s.bytes.toLocaleString('en')} bytes.</p>` : ''}
  <p class="hashes">paramsHash <code title="${s.paramsHash}">${short(s.paramsHash)}</code> (keccak256 of the line, checked when listed) · requestHash <code title="${s.requestHash}">${short(s.requestHash)}</code></p>
</li>`
}

export function previewSection(p: ListingPreview | undefined, v: Verification): Html {
  if (!p)
    return html`<section aria-labelledby="preview-h" id="preview"><h2 id="preview-h">Preview</h2>
<p class="muted">This listing was made before the market kept previews.</p></section>`
  const fields = p.fields.length + p.moreFields
  return html`<section aria-labelledby="preview-h" id="preview">
<h2 id="preview-h">Preview</h2>
<p class="preview-facts">${p.lines.toLocaleString('en')} lines · ${fields} ${fields === 1 ? 'field' : 'fields'}${
    p.from && p.to
      ? html` · <code>${p.timeField}</code> from <time datetime="${p.from}">${when(p.from)}</time> to <time datetime="${p.to}">${when(p.to)}</time> UTC`
      : ''
  }${p.otherLines > 0 ? ` · ${p.otherLines} lines are not JSON objects` : ''}</p>
<div class="preview-grid">
<div class="scroll"><table class="fields">
<caption>Fields of the lines</caption>
<thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Lines</th><th scope="col">Min</th><th scope="col">Max</th></tr></thead>
<tbody>${p.fields.map(
    (f) =>
      html`<tr><td><code>${f.name}</code></td><td>${f.types.join(' | ')}</td><td class="n">${f.count.toLocaleString('en')}</td><td class="n">${num(f.min)}</td><td class="n">${num(f.max)}</td></tr>`,
  )}${p.moreFields > 0 ? html`<tr><td colspan="5" class="muted">and ${p.moreFields} more fields</td></tr>` : ''}</tbody>
</table></div>
${histogram(p)}
</div>
<h3>Sample lines</h3>
${
  p.samples.length === 0
    ? html`<p class="muted">The seller published no sample lines.</p>`
    : html`<p>The seller published the first ${p.samples.length === 1 ? 'line' : `${p.samples.length} lines`} of the data file. Each is checked on chain like every row; <code>npx svc attest verify-line</code> checks one line yourself.</p>
<ol class="samples">${p.samples.map((s) => sampleLine(s, v))}</ol>`
}
</section>`
}

// The section depends only on the listing's preview (fixed at listing time) and its last
// verification, yet rendering it is half of the listing page's own work (bench/README.md,
// website): the most recently shown ones are kept, keyed by the slug and the verdict.
const MAX_CACHED = 256
const cache = new Map<string, Html>()

export function cachedPreviewSection(slug: string, p: ListingPreview | undefined, v: Verification): Html {
  const key = `${slug}|${v.state}|${v.block}|${v.checkedAt}`
  const hit = cache.get(key)
  if (hit) return hit
  const out = previewSection(p, v)
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!)
  cache.set(key, out)
  return out
}
