// The structure of SOP.md from micromark's event stream: headings, the `## Steps` section and
// the line span of each of its top-level numbered items, and the lines inside code blocks.
// micromark gives exact positions and knows what is a list, a heading or code; the text of each
// bullet is then read line by line (md-steps.ts) because markdown would re-interpret the JSON in
// `call:` bullets (`*`, `_`, backslashes) if we took its rendered text.
import { parse, postprocess, preprocess } from 'micromark'

export interface Heading {
  level: number
  text: string
  line: number
}

export interface ItemSpan {
  /** First and last line (1-based, inclusive) of the item. */
  start: number
  end: number
  /** 1-based column where the item's content starts (after `1. `). */
  contentColumn: number
  /** The number as written (`3.` → 3). */
  written: number
}

export interface Outline {
  headings: Heading[]
  /** The `## Steps` heading, if any (the first one when there are several). */
  steps?: Heading
  /** How many `## Steps` headings there are (more than one is an author mistake). */
  stepsHeadings: Heading[]
  items: ItemSpan[]
  /** Lines of top-level bullet (unordered) items inside `## Steps`: not steps. */
  strayBullets: number[]
  /** Lines that belong to fenced or indented code. */
  codeLines: Set<number>
}

// Only block structure matters here (titles and bullet values are read from the raw lines), so
// the inline constructs are switched off: a third less work per file, same positions.
const INLINE = [
  'attention',
  'autolink',
  'characterEscape',
  'characterReference',
  'codeText',
  'htmlText',
  'labelStartImage',
  'labelStartLink',
  'labelEnd',
  'hardBreakEscape',
  'hardBreakTrailing',
]

export function outline(text: string): Outline {
  const parser = parse({ extensions: [{ disable: { null: INLINE } }] })
  const events = postprocess(parser.document().write(preprocess()(text, undefined, true)))
  const headings: Heading[] = []
  const codeLines = new Set<number>()
  // Lists in document order with their depth, and item prefixes attributed to the innermost list.
  interface ListInfo {
    ordered: boolean
    depth: number
    start: number
    end: number
    items: ItemSpan[]
  }
  const lists: ListInfo[] = []
  const stack: ListInfo[] = []
  let headingLevel = 0
  let headingLine = 0
  let headingText = ''
  for (const [kind, tok] of events) {
    const type = tok.type as string
    if (kind === 'enter') {
      switch (type) {
        case 'atxHeading':
        case 'setextHeading':
          headingLevel = 0
          headingText = ''
          headingLine = tok.start.line
          break
        case 'atxHeadingSequence':
          if (headingLevel === 0) headingLevel = tok.end.offset - tok.start.offset
          break
        case 'setextHeadingLineSequence':
          headingLevel = text[tok.start.offset] === '=' ? 1 : 2
          break
        case 'atxHeadingText':
        case 'setextHeadingText':
          headingText = text.slice(tok.start.offset, tok.end.offset)
          break
        case 'codeFenced':
        case 'codeIndented':
          for (let l = tok.start.line; l <= tok.end.line; l++) codeLines.add(l)
          break
        case 'listOrdered':
        case 'listUnordered': {
          const info: ListInfo = {
            ordered: type === 'listOrdered',
            depth: stack.length,
            start: tok.start.line,
            end: tok.end.line,
            items: [],
          }
          lists.push(info)
          stack.push(info)
          break
        }
        case 'listItemPrefix': {
          const top = stack[stack.length - 1]
          if (top)
            top.items.push({
              start: tok.start.line,
              end: tok.start.line,
              contentColumn: tok.end.column,
              written: 0,
            })
          break
        }
        case 'listItemValue': {
          const top = stack[stack.length - 1]
          const item = top?.items[top.items.length - 1]
          if (item) item.written = Number(text.slice(tok.start.offset, tok.end.offset))
          break
        }
      }
    } else {
      if (type === 'atxHeading' || type === 'setextHeading')
        headings.push({ level: headingLevel, text: headingText.trim(), line: headingLine })
      if (type === 'listOrdered' || type === 'listUnordered') stack.pop()
    }
  }
  for (const list of lists) {
    list.items.forEach((item, i) => {
      const next = list.items[i + 1]
      item.end = next ? next.start - 1 : list.end
    })
  }
  headings.sort((a, b) => a.line - b.line)
  const stepsHeadings = headings.filter((h) => h.level === 2 && h.text.toLowerCase() === 'steps')
  const steps = stepsHeadings[0]
  const items: ItemSpan[] = []
  const strayBullets: number[] = []
  if (steps) {
    // SOP-NOTES: the next `## ` heading ends the section (a `# ` heading does too).
    const after = headings.find((h) => h.line > steps.line && h.level <= 2)
    const endLine = after ? after.line - 1 : Number.POSITIVE_INFINITY
    for (const list of lists) {
      if (list.depth !== 0 || list.start <= steps.line || list.start > endLine) continue
      for (const item of list.items) {
        if (list.ordered) items.push({ ...item, end: Math.min(item.end, endLine) })
        else strayBullets.push(item.start)
      }
    }
  }
  return { headings, steps, stepsHeadings, items, strayBullets, codeLines }
}
