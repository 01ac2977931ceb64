// A listing's description as Markdown (CommonMark, micromark). Raw HTML is never passed through:
// micromark escapes it by default (allowDangerousHtml off), and the HTML constructs are disabled
// outright, so `<script>` is shown as text. Images are disabled too: a seller's `![](https://…)`
// would load from another origin (the pages load nothing from elsewhere; the CSP blocks it
// anyway) and is shown as its text. Links keep micromark's safe protocols only (http, https,
// mailto…), so `javascript:` links lose their target.
import { micromark } from 'micromark'
import { Html } from '../../web/html.ts'

const NO_HTML_NO_IMAGES = { disable: { null: ['htmlFlow', 'htmlText', 'labelStartImage'] } }

// micromark takes milliseconds for a long description (2.5 ms for 2,000 characters here), more
// than the rest of the listing page; a listing's description never changes, so its rendering is
// kept, for the most recently shown descriptions, keyed by the text itself.
const MAX_CACHED = 256
const cache = new Map<string, Html>()

export function markdown(text: string): Html {
  const hit = cache.get(text)
  if (hit) return hit
  const out = new Html(micromark(text, { extensions: [NO_HTML_NO_IMAGES] }))
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!)
  cache.set(text, out)
  return out
}
