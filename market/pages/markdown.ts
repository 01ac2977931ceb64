// A listing's description as Markdown (CommonMark, micromark). Raw HTML is never passed through:
// micromark escapes it by default (allowDangerousHtml off), and the HTML constructs are disabled
// outright, so `<script>` is shown as text. Images are disabled too: a seller's `![](https://…)`
// would load from another origin (the pages load nothing from elsewhere; the CSP blocks it
// anyway) and is shown as its text. Links keep micromark's safe protocols only (http, https,
// mailto…), so `javascript:` links lose their target.
import { micromark } from 'micromark'
import { Html } from './html.ts'

const NO_HTML_NO_IMAGES = { disable: { null: ['htmlFlow', 'htmlText', 'labelStartImage'] } }

export function markdown(text: string): Html {
  return new Html(micromark(text, { extensions: [NO_HTML_NO_IMAGES] }))
}
