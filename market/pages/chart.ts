// A device's operations over time: attested rows it listed per UTC day, as a small inline SVG
// bar chart with the same numbers in a table for screen readers. Pure.
import { type Html, html } from '../../web/html.ts'

export interface DayCount {
  /** YYYY-MM-DD (UTC). */
  day: string
  rows: number
}

const DAY = 86_400_000

/** Rows listed per UTC day over the `days` days ending on `now`'s day, oldest first. */
export function dailyRows(
  listings: readonly { createdAt: number; rows: number }[],
  now: number,
  days = 30,
): DayCount[] {
  const end = Math.floor(now / DAY)
  const out: DayCount[] = Array.from({ length: days }, (_, i) => ({
    day: new Date((end - days + 1 + i) * DAY).toISOString().slice(0, 10),
    rows: 0,
  }))
  for (const l of listings) {
    const i = Math.floor(l.createdAt / DAY) - (end - days + 1)
    if (i >= 0 && i < days) out[i]!.rows += l.rows
  }
  return out
}

export function opsChart(points: readonly DayCount[], label: string): Html {
  const w = 600
  const h = 160
  const pad = 24
  const max = Math.max(1, ...points.map((p) => p.rows))
  const bw = (w - pad * 2) / Math.max(1, points.length)
  const bars = points.map((p, i) => {
    const bh = Math.round((p.rows / max) * (h - pad * 2))
    const x = (pad + i * bw + 1).toFixed(1)
    return html`<rect x="${x}" y="${h - pad - bh}" width="${Math.max(1, bw - 2).toFixed(1)}" height="${bh}"><title>${p.day}: ${p.rows} rows</title></rect>`
  })
  const first = points[0]?.day ?? ''
  const last = points[points.length - 1]?.day ?? ''
  const total = points.reduce((s, p) => s + p.rows, 0)
  return html`<figure class="chart">
  <svg viewBox="0 0 ${w} ${h}" role="img" aria-label="${label}: ${total} rows from ${first} to ${last}, at most ${max} in one day">
    <line x1="${pad}" y1="${h - pad}" x2="${w - pad}" y2="${h - pad}" class="axis"/>
    ${bars}
    <text x="${pad}" y="${h - 6}" class="lbl">${first}</text>
    <text x="${w - pad}" y="${h - 6}" class="lbl" text-anchor="end">${last}</text>
    <text x="${pad}" y="14" class="lbl">${max} rows</text>
  </svg>
  <figcaption>${label}</figcaption>
  <details><summary>Numbers</summary>
    <table><thead><tr><th scope="col">Day (UTC)</th><th scope="col">Rows</th></tr></thead>
    <tbody>${points.filter((p) => p.rows > 0).map((p) => html`<tr><td>${p.day}</td><td>${p.rows}</td></tr>`)}</tbody></table>
  </details>
</figure>`
}
