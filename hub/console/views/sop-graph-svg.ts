// A SOP's step graph as an SVG diagram, for the console's SOPs page: the data of `svc sop graph`
// (sops/graph.ts stepRoutes) drawn as boxes and arrows. Pure: SOP in, markup out, and the same
// SOP always gives the same bytes (nothing from counters, clocks or randomness).
//
// Layout, top to bottom in step order:
// - each step is a box; a terminal step has a heavy border and says so;
// - a route to the row just below (the next step, or `end` under the last step) is a straight
//   arrow; every other route after success runs in a lane on the right, nested by span so that
//   lanes never cross;
// - failure routes are red and dashed, on the left: `goto` in lanes, `retry` as a loop, and the
//   default (the run fails) as a short stub ending in ✕;
// - `end` and `run fails` are pills under the last step, drawn only when a route reaches them.
// Arrowheads are drawn as polygons, not <marker>s, so several graphs on one page share no ids.
// Colours are presentation attributes, not <style>, so a strict CSP (no inline styles) keeps them.
import { type Route, type StepNode, routeText, stepRoutes } from '../../../sops/graph.ts'
import type { Sop } from '../../../sops/types.ts'
import { type Html, html, trusted } from '../../../web/html.ts'

const BOX_W = 210
const BOX_H = 46
const GAP = 34
const PAD = 10
const LANE = 12
/** Room on the left of a box for the ✕ stub and a retry loop, before the first failure lane. */
const LEFT_FIXED = 34
const PILL_W = 96
const PILL_H = 24
/** Least distance between two routes meeting one side of a box: one line of label text. */
const ATTACH_GAP = 13
/** Where a retry loop on a box's left side comes back in, from the box's top. */
const RETRY_LOOP = 27
/** Estimated width of one character of 11 px text (labels are sized before a browser measures). */
const CHAR_W = 6.3
const TITLE_CHARS = 21
const LABEL_CHARS = 28

const INK = '#2b3445'
const MUTED = '#5b6577'
const FAIL = '#c0392b'
const FONT = 'system-ui, -apple-system, Segoe UI, Roboto, sans-serif'

type Target = number | 'end' | 'fail'

interface Edge {
  from: number
  to: Target
  route: Route
  label: string
  failure: boolean
}

interface Attach {
  edge: Edge
  /** exit: the edge leaves this node; entry: it arrives. */
  role: 'exit' | 'entry'
  y: number
}

const shorten = (s: string, max: number): string => (s.length > max ? `${s.slice(0, max - 1)}…` : s)
const textW = (s: string): number => Math.ceil(s.length * CHAR_W)
/** Coordinates to one decimal, so the output is stable and short. */
const n = (v: number): string => String(Math.round(v * 10) / 10)

function edgeOf(from: number, route: Route): Edge | null {
  const failure = route.kind === 'retry' || route.kind.startsWith('on-failure')
  switch (route.kind) {
    case 'when-false':
      return { from, to: route.target ?? 'end', route, label: `not ${route.condition}`, failure }
    case 'switch':
      return {
        from,
        to: route.target ?? 'fail',
        route,
        label: `${route.port}: ${route.condition.trim() || 'always'}`,
        failure,
      }
    case 'switch-none':
      return { from, to: 'end', route, label: 'no port matches', failure }
    case 'next':
      return { from, to: route.target, route, label: 'next', failure }
    case 'end':
      return { from, to: 'end', route, label: 'terminal', failure }
    case 'sequence':
      return { from, to: route.target ?? 'end', route, label: '', failure }
    case 'on-failure-goto':
      return { from, to: route.target, route, label: 'on failure', failure }
    // Drawn beside the box (loop, stub), not as edges between nodes.
    case 'retry':
    case 'on-failure-fail':
      return null
  }
}

function arrowHead(x: number, y: number, dir: 'down' | 'left' | 'right', colour: string): Html {
  const pts =
    dir === 'down'
      ? [
          [x, y],
          [x - 4, y - 7],
          [x + 4, y - 7],
        ]
      : dir === 'left'
        ? [
            [x, y],
            [x + 7, y - 4],
            [x + 7, y + 4],
          ]
        : [
            [x, y],
            [x - 7, y - 4],
            [x - 7, y + 4],
          ]
  return html`<polygon points="${pts.map(([a, b]) => `${n(a!)},${n(b!)}`).join(' ')}" fill="${colour}"/>`
}

/** A label with a white halo, readable where it crosses a lane. */
function label(x: number, y: number, text: string, anchor: 'start' | 'end', colour: string): Html {
  return html`<text x="${n(x)}" y="${n(y)}" font-size="11" text-anchor="${anchor}" fill="${colour}" stroke="#fff" stroke-width="3" paint-order="stroke">${text}</text>`
}

/**
 * Greedy lane assignment by span, shortest first: an edge takes the innermost lane whose edges do
 * not overlap its rows, so shorter routes sit inside longer ones and no two lanes cross.
 */
function assignLanes(edges: Edge[], row: (t: Target) => number): Map<Edge, number> {
  const span = (e: Edge): [number, number] => {
    const a = row(e.from)
    const b = row(e.to)
    return [Math.min(a, b), Math.max(a, b)]
  }
  const order = [...edges].sort((p, q) => {
    const [p0, p1] = span(p)
    const [q0, q1] = span(q)
    return p1 - p0 - (q1 - q0) || p0 - q0 || row(p.from) - row(q.from) || row(p.to) - row(q.to)
  })
  const lanes: [number, number][][] = []
  const out = new Map<Edge, number>()
  for (const e of order) {
    const [a, b] = span(e)
    let k = 0
    while (lanes[k]?.some(([c, d]) => a <= d && c <= b)) k++
    ;(lanes[k] ??= []).push([a, b])
    out.set(e, k)
  }
  return out
}

export interface SopGraphSvg {
  svg: Html
  width: number
  height: number
}

/** The step graph of `sop` as an inline <svg>, at its natural size (its box scrolls, it never shrinks). */
export function sopGraphSvg(sop: Sop): SopGraphSvg {
  const nodes: StepNode[] = stepRoutes(sop)
  const count = nodes.length
  const edges: Edge[] = []
  for (const node of nodes) {
    for (const r of node.routes) {
      const e = edgeOf(node.step, r)
      if (e) edges.push(e)
    }
    const f = edgeOf(node.step, node.onFailure)
    if (f) edges.push(f)
  }
  const hasEnd = edges.some((e) => e.to === 'end')
  const hasFail = edges.some((e) => e.to === 'fail')
  const row = (t: Target): number => (t === 'end' ? count : t === 'fail' ? count + (hasEnd ? 1 : 0) : t - 1)
  const rows = count + (hasEnd ? 1 : 0) + (hasFail ? 1 : 0)

  // A straight arrow for the first success route of a step that goes to the row just below.
  const straight = new Set<Edge>()
  for (const node of nodes) {
    const e = edges.find((x) => x.from === node.step && !x.failure && row(x.to) === row(node.step) + 1)
    if (e) straight.add(e)
  }
  const right = edges.filter((e) => !e.failure && !straight.has(e))
  const left = edges.filter((e) => e.failure)
  const rightLane = assignLanes(right, row)
  const leftLane = assignLanes(left, row)

  // The left margin holds the ✕ stubs, retry loops and failure lanes; their labels go in the gaps
  // between rows, so a failure route costs a lane's width, not a label's.
  let leftNeed = LEFT_FIXED - 10
  for (const e of left) leftNeed = Math.max(leftNeed, LEFT_FIXED + (leftLane.get(e) ?? 0) * LANE + 2)
  const boxX = PAD + leftNeed
  const boxR = boxX + BOX_W
  const cx = boxX + BOX_W / 2
  const laneRX = (e: Edge): number => boxR + 14 + (rightLane.get(e) ?? 0) * LANE
  const laneLX = (e: Edge): number => boxX - LEFT_FIXED - (leftLane.get(e) ?? 0) * LANE

  // Where each edge meets each node's side, by node: edges to higher rows nearer the top.
  const sides = (side: Edge[]): Map<Target, Attach[]> => {
    const byNode = new Map<Target, Attach[]>()
    for (const e of side) {
      for (const role of ['exit', 'entry'] as const) {
        const at = role === 'exit' ? e.from : e.to
        const list = byNode.get(at) ?? []
        list.push({ edge: e, role, y: 0 })
        byNode.set(at, list)
      }
    }
    for (const list of byNode.values()) {
      const other = (a: Attach): number => row(a.role === 'exit' ? a.edge.to : a.edge.from)
      list.sort(
        (p, q) =>
          other(p) - other(q) ||
          (p.role === q.role ? 0 : p.role === 'exit' ? -1 : 1) ||
          row(p.edge.from) - row(q.edge.from),
      )
    }
    return byNode
  }
  const retrying = new Set(nodes.filter((x) => x.onFailure.kind === 'retry').map((x) => x.step))
  const rightSide = sides(right)
  const leftSide = sides(left)
  // A row grows when many routes meet its box, so that each route's label has its own line.
  const heights: number[] = []
  for (let r = 0; r < rows; r++) {
    const t: Target = r < count ? r + 1 : r === count && hasEnd ? 'end' : 'fail'
    const m = Math.max(rightSide.get(t)?.length ?? 0, leftSide.get(t)?.length ?? 0)
    // A retry loop takes the top of the box's left side: failure lanes meet it below the loop.
    const l = typeof t === 'number' && retrying.has(t) ? (leftSide.get(t)?.length ?? 0) : 0
    heights.push(
      typeof t === 'number'
        ? Math.max(BOX_H, (m + 1) * ATTACH_GAP + 20, l ? RETRY_LOOP + (l + 1) * 8 + 14 : 0)
        : Math.max(PILL_H, (m + 1) * 5 + 8),
    )
  }
  const tops: number[] = [PAD]
  for (let r = 0; r < rows; r++) tops.push(tops[r]! + Math.max(heights[r]!, BOX_H) + GAP)
  const top = (r: number): number => tops[r]!
  const nodeH = (t: Target): number => heights[row(t)] ?? BOX_H
  const nodeTop = (t: Target): number => top(row(t)) + (Math.max(nodeH(t), BOX_H) - nodeH(t)) / 2
  const nodeRight = (t: Target): number => (typeof t === 'number' ? boxR : cx + PILL_W / 2)
  const nodeLeft = (t: Target): number => (typeof t === 'number' ? boxX : cx - PILL_W / 2)

  const attachments = (
    byNode: Map<Target, Attach[]>,
    side: 'left' | 'right',
  ): Map<Edge, { exit: number; entry: number }> => {
    const out = new Map<Edge, { exit: number; entry: number }>()
    for (const [at, list] of byNode) {
      // A box keeps its bottom-left corner for the ✕ stub, and the top of its left side for a retry loop.
      const below = side === 'left' && typeof at === 'number' && retrying.has(at) ? RETRY_LOOP - 6 : 0
      const y0 = nodeTop(at) + (typeof at === 'number' ? 6 : 4) + below
      const h = nodeH(at) - (typeof at === 'number' ? 20 : 8) - below
      list.forEach((a, i) => {
        const y = y0 + (h * (i + 1)) / (list.length + 1)
        const cur = out.get(a.edge) ?? { exit: 0, entry: 0 }
        cur[a.role] = y
        out.set(a.edge, cur)
      })
    }
    return out
  }
  const rightAt = attachments(rightSide, 'right')
  const leftAt = attachments(leftSide, 'left')

  let maxX = boxR
  let maxY = 0
  const parts: Html[] = []

  // Routes first, so boxes are drawn over their ends.
  for (const e of edges) {
    const title = html`<title>step ${e.from}: ${routeText(e.route)}</title>`
    const colour = e.failure ? FAIL : INK
    const dash = e.failure ? trusted(' stroke-dasharray="5 3"') : ''
    const attrs = html`data-route="${e.route.kind}" data-from="${e.from}" data-to="${e.to}"`
    if (straight.has(e)) {
      const y1 = nodeTop(e.from) + nodeH(e.from)
      const y2 = nodeTop(e.to)
      const lx = cx + 6
      if (e.label) maxX = Math.max(maxX, lx + textW(shorten(e.label, LABEL_CHARS)))
      parts.push(
        html`<g ${attrs}>${title}<line x1="${n(cx)}" y1="${n(y1)}" x2="${n(cx)}" y2="${n(y2 - 1)}" stroke="${colour}" stroke-width="1.5"${dash}/>${arrowHead(cx, y2, 'down', colour)}${e.label ? label(lx, (y1 + y2) / 2 + 4, shorten(e.label, LABEL_CHARS), 'start', MUTED) : ''}</g>`,
      )
      continue
    }
    const onRight = !e.failure
    const at = (onRight ? rightAt : leftAt).get(e)!
    const x1 = onRight ? nodeRight(e.from) : nodeLeft(e.from)
    const x2 = onRight ? nodeRight(e.to) : nodeLeft(e.to)
    const lx = onRight ? laneRX(e) : laneLX(e)
    const d = `M${n(x1)},${n(at.exit)} H${n(lx)} V${n(at.entry)} H${n(onRight ? x2 + 1 : x2 - 1)}`
    const text = shorten(e.label, LABEL_CHARS)
    const down = at.entry >= at.exit
    // Right: above the exit line, beside the lane (each exit of a box has its own line,
    // ATTACH_GAP). Left: in the gap the route enters first, the top line of a gap for routes
    // going down, the bottom line for routes going up, so two never share a line.
    const ly = onRight ? at.exit - 3 : down ? nodeTop(e.from) + nodeH(e.from) + 13 : nodeTop(e.from) - 6
    if (onRight) maxX = Math.max(maxX, lx + 4 + textW(text))
    parts.push(
      html`<g ${attrs}>${title}<path d="${d}" fill="none" stroke="${colour}" stroke-width="1.5"${dash}/>${arrowHead(x2, at.entry, onRight ? 'left' : 'right', colour)}${text ? label(lx + 4, ly, text, 'start', colour === INK ? MUTED : FAIL) : ''}</g>`,
    )
  }

  // Failure beside each box: a retry loop, and the ✕ stub when failing (at last) fails the run.
  for (const node of nodes) {
    const y = top(row(node.step))
    const h = nodeH(node.step)
    const f = node.onFailure
    if (f.kind === 'retry') {
      const y1 = y + 9
      const y2 = y + RETRY_LOOP
      const text = `retry ×${f.count}`
      parts.push(
        html`<g data-route="retry" data-from="${node.step}" data-to="${node.step}"><title>step ${node.step}: ${routeText(f)}</title><path d="M${n(boxX)},${n(y1)} C${n(boxX - 24)},${n(y1)} ${n(boxX - 24)},${n(y2)} ${n(boxX - 1)},${n(y2)}" fill="none" stroke="${FAIL}" stroke-width="1.5" stroke-dasharray="5 3"/>${arrowHead(boxX, y2, 'right', FAIL)}${label(boxX - 22, y + h + 13, text, 'start', FAIL)}</g>`,
      )
      // Its label sits in the gap below the box (the top line; see the lanes' labels above).
      maxY = Math.max(maxY, y + h + 17)
    }
    if (f.kind !== 'on-failure-goto') {
      const sy = y + h - 9
      const why = f.kind === 'retry' ? 'when the retries fail too, the run fails' : routeText(f)
      parts.push(
        html`<g data-route="on-failure-fail" data-from="${node.step}" data-to="fail"><title>step ${node.step}: ${why}</title><line x1="${n(boxX)}" y1="${n(sy)}" x2="${n(boxX - 12)}" y2="${n(sy)}" stroke="${FAIL}" stroke-width="1.5" stroke-dasharray="3 2"/><text x="${n(boxX - 19)}" y="${n(sy + 4)}" font-size="11" fill="${FAIL}">✕</text></g>`,
      )
    }
  }

  for (const node of nodes) {
    const y = top(row(node.step))
    const h = nodeH(node.step)
    const tags = [
      node.kind !== 'execute' ? node.kind : '',
      node.terminal ? 'terminal' : '',
      node.dependsOn.length ? `after ${node.dependsOn.join(', ')}` : '',
    ].filter(Boolean)
    const fill = node.kind === 'checkpoint' ? '#fff6dc' : node.kind === 'capability' ? '#eef4ff' : '#f5f7fb'
    const stroke = node.terminal ? INK : '#8a94a6'
    const width = node.terminal ? 2.5 : 1
    const titleY = tags.length ? y + h / 2 - 3 : y + h / 2 + 5
    parts.push(
      html`<g data-step="${node.step}"${node.terminal ? trusted(' data-terminal="true"') : ''}><title>${node.step}. ${node.title}${tags.length ? ` (${tags.join(', ')})` : ''}</title><rect x="${n(boxX)}" y="${n(y)}" width="${BOX_W}" height="${h}" rx="6" fill="${fill}" stroke="${stroke}" stroke-width="${width}"/><circle cx="${n(boxX + 17)}" cy="${n(y + h / 2)}" r="11" fill="${INK}"/><text x="${n(boxX + 17)}" y="${n(y + h / 2 + 4)}" font-size="11" font-weight="700" text-anchor="middle" fill="#fff">${node.step}</text><text x="${n(boxX + 34)}" y="${n(titleY)}" font-size="13" font-weight="600" fill="${INK}">${shorten(node.title, TITLE_CHARS)}</text>${tags.length ? html`<text x="${n(boxX + 34)}" y="${n(y + h / 2 + 13)}" font-size="11" fill="${MUTED}">${tags.join(' · ')}</text>` : ''}</g>`,
    )
  }

  const pill = (t: 'end' | 'fail', text: string, fill: string, stroke: string): Html => {
    const y = nodeTop(t)
    const h = nodeH(t)
    return html`<g data-node="${t}"><rect x="${n(cx - PILL_W / 2)}" y="${n(y)}" width="${PILL_W}" height="${n(h)}" rx="12" fill="${fill}" stroke="${stroke}" stroke-width="1.5"/><text x="${n(cx)}" y="${n(y + h / 2 + 4)}" font-size="12" font-weight="600" text-anchor="middle" fill="${stroke}">${text}</text></g>`
  }
  if (hasEnd) parts.push(pill('end', 'end', '#e8f5e9', '#2e7d32'))
  if (hasFail) parts.push(pill('fail', 'run fails', '#fdecea', FAIL))

  const width = Math.ceil(maxX + PAD)
  const height = Math.ceil(Math.max(top(rows) - GAP, maxY) + PAD)
  const svg = html`<svg xmlns="http://www.w3.org/2000/svg" class="sop-graph" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${`step graph of ${sop.name}: ${count} step${count === 1 ? '' : 's'}`}" font-family="${FONT}">${parts}</svg>`
  return { svg, width, height }
}
