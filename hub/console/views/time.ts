// Times as the console shows them: an age a person reads at a glance ("23 s", "4 min", "2 h"),
// beside the exact UTC time in a <time> element. Pure: the caller passes `now`.
import { type Html, html } from '../../../web/html.ts'

export function ageText(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`
}

/** `2026-11-25 15:04:05Z`: seconds are enough for a person, and UTC is the hub log's clock. */
export function utcText(at: number): string {
  return new Date(at)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, 'Z')
}

/** "23 s ago" with the exact time on hover and for machines. */
export function ago(at: number, now: number): Html {
  return html`<time datetime="${new Date(at).toISOString()}" title="${utcText(at)}">${ageText(now - at)} ago</time>`
}
