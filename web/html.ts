// Shared by the market's pages and the hub console.
// Safe HTML building: every interpolated value is escaped unless it is already Html (made by
// this module). Listings come from devices, so nothing user-supplied reaches a page unescaped.

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

/** Escape text for an HTML text node or a quoted attribute value. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[]

function render(v: HtmlValue): string {
  if (v === null || v === undefined || v === false) return ''
  if (v instanceof Html) return v.value
  if (Array.isArray(v)) return v.map(render).join('')
  return escapeHtml(String(v))
}

/** Tagged template: `html\`<p>${text}</p>\`` escapes `text`; nested Html passes through. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!
  return new Html(out)
}

/** Markup built elsewhere and known safe (e.g. a constant). Never pass user input. */
export const trusted = (s: string): Html => new Html(s)
