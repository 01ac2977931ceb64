// The structure of SOP.md from micromark's event stream: headings, the `## Steps` section, where
// each of its top-level numbered items starts, and the lines inside fenced code blocks.
// micromark gives exact positions and knows what is a list, a heading or code; the text of each
// bullet is then read line by line (md-steps.ts) because markdown would re-interpret the JSON in
// `call:` bullets (`*`, `_`, backslashes) if we took its rendered text.
//
// A step owns every line from its item to the next step (or the end of the section), not just
// the lines Markdown puts inside the item: `1.` followed by 2-space bullets, or `10.` by 3-space
// ones, makes a separate list to a strict reader, and that list held the step's gates and calls
// (sops/FORMAT.md, "Reading the steps": a bullet belongs to the step above it whatever its indentation).
import { parse, postprocess, preprocess } from 'micromark'

export interface Heading {
  level: number
  text: string
  line: number
}

export interface ItemSpan {
  /** First and last line (1-based, inclusive) of the step: up to the next step or the section's end. */
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
  /** Lines of top-level bullet items inside `## Steps` before its first step: they belong to no step. */
  strayBullets: number[]
  /**
   * Lines that belong to fenced code. Indented code is not counted: a bullet indented deep
   * enough to become code to Markdown is still a bullet to an author, and must not lose its gate.
   */
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
          for (let l = tok.start.line; l <= tok.end.line; l++) codeLines.add(l)
          break
        case 'listOrdered':
        case 'listUnordered': {
          const info: ListInfo = {
            ordered: type === 'listOrdered',
            depth: stack.length,
            start: tok.start.line,
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
  headings.sort((a, b) => a.line - b.line)
  const stepsHeadings = headings.filter((h) => h.level === 2 && h.text.toLowerCase() === 'steps')
  const steps = stepsHeadings[0]
  const items: ItemSpan[] = []
  const strayBullets: number[] = []
  if (steps) {
    // sops/FORMAT.md, "Reading the steps": the next `## ` heading ends the section (a `# ` heading does too).
    const after = headings.find((h) => h.line > steps.line && h.level <= 2)
    const endLine = after ? after.line - 1 : text.split(/\r?\n/).length
    const bullets: number[] = []
    for (const list of lists) {
      if (list.depth !== 0 || list.start <= steps.line || list.start > endLine) continue
      for (const item of list.items) {
        if (list.ordered) items.push({ ...item })
        else bullets.push(item.start)
      }
    }
    items.sort((a, b) => a.start - b.start)
    items.forEach((item, i) => {
      const next = items[i + 1]
      item.end = next ? next.start - 1 : endLine
    })
    const first = items[0]?.start ?? Number.POSITIVE_INFINITY
    for (const line of bullets) if (line < first) strayBullets.push(line)
  }
  return { headings, steps, stepsHeadings, items, strayBullets, codeLines }
}
