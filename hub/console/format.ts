// Small pieces of page text shared by the console's pages. Pure.
import { type Html, html } from '../../web/html.ts'

/** "now", "12 s", "4 min", "3 h", "2 d": how long ago, for a glance. */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 2) return 'now'
  if (s < 90) return `${s} s`
  const m = Math.round(s / 60)
  if (m < 90) return `${m} min`
  const h = Math.round(m / 60)
  if (h < 36) return `${h} h`
  return `${Math.round(h / 24)} d`
}

const iso = (at: number): string => new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z')

/** A time as `<time>`: the exact UTC instant in the tooltip and datetime, the age as text. */
export function when(at: number, now: number): Html {
  const a = age(now - at)
  return html`<time datetime="${iso(at)}" title="${iso(at)}">${a === 'now' ? 'just now' : `${a} ago`}</time>`
}

/** A duration between two instants: "35 ms", "4.2 s", "3 min". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`
  return age(ms)
}

/** A JSON value (or text) for a `<pre>`: pretty, and cut at `max` characters with a note. */
export function jsonText(v: unknown, max = 4000): string {
  const text = typeof v === 'string' ? v : (JSON.stringify(v, null, 2) ?? String(v))
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text
}

/** A run state as a tag; the class colours it (console.css `.tag.s-<state>`). */
export function stateTag(state: string): Html {
  return html`<span class="tag s-${state}">${state.replace('_', ' ')}</span>`
}

/** Midnight of the day `now` falls in, in the hub's local time. */
export function startOfDay(now: number): number {
  const d = new Date(now)
  d.setHours(0, 0, 0, 0)
  return d.getTime()
}
