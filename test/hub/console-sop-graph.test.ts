// The SOPs page's step graph (hub/console/views/sop-graph-svg.ts), pure: every step and every
// route of `svc sop graph`'s data is drawn, text is escaped, and the layout is deterministic with
// lanes that never overlap.
import t from 'tap'
import { stepRoutes } from '../../sops/graph.ts'
import { loadAll } from '../../sops/load.ts'
import type { Sop } from '../../sops/types.ts'
import { sopGraphSvg } from '../../hub/console/views/sop-graph-svg.ts'
import { sop, step } from '../engine/helpers.ts'

const examples = new URL('../../sops/examples', import.meta.url).pathname

/** Every kind of route: switch ports (one without a target), a loop, goto, retry, next back, terminal. */
function rich(title = 'Decide the way'): Sop {
  return sop({
    name: 'rich',
    steps: [
      step(1, { title: 'Read', kind: 'checkpoint' }),
      step(2, {
        title,
        switch: [
          { name: 'hot', condition: '$.steps.1.t > 30', target: 5 },
          { name: 'cold', condition: '$.steps.1.t < 5', target: 4 },
          { name: 'broken', condition: '$.steps.1.err == 1', target: null },
        ],
      }),
      step(3, {
        title: 'Count down',
        when: '$.steps.3.left > 0',
        next: 3,
        onFailure: { kind: 'goto', step: 6 },
      }),
      step(4, { title: 'Warm up', onFailure: { kind: 'retry', count: 3 }, dependsOn: [1] }),
      step(5, { title: 'Cool down', terminal: true, onFailure: { kind: 'goto', step: 2 } }),
      step(6, { title: 'Alert', next: 1 }),
    ],
  })
}

const attr = (svg: string, name: string): string[] =>
  [...svg.matchAll(new RegExp(` ${name}="([^"]*)"`, 'g'))].map((m) => m[1]!)

/** The `data-route/from/to` triples drawn. */
function drawnRoutes(svg: string): string[] {
  return [...svg.matchAll(/data-route="([^"]+)" data-from="([^"]+)" data-to="([^"]+)"/g)].map(
    (m) => `${m[1]} ${m[2]}->${m[3]}`,
  )
}

/** What the graph data says must be drawn, in the same words. */
function expectedRoutes(s: Sop): string[] {
  const out: string[] = []
  for (const node of stepRoutes(s)) {
    for (const r of [...node.routes, node.onFailure]) {
      const to =
        r.target !== null
          ? String(r.target)
          : r.kind === 'switch' || r.kind === 'on-failure-fail'
            ? 'fail'
            : 'end'
      out.push(`${r.kind} ${node.step}->${to}`)
    }
    // After the last retry the run fails: drawn as the ✕ stub too.
    if (node.onFailure.kind === 'retry') out.push(`on-failure-fail ${node.step}->fail`)
  }
  return out.sort()
}

t.test('every step and every route of the graph data is drawn, nothing more', async (t) => {
  const all = await loadAll(examples)
  t.equal(all.sops.length, 3, 'the three examples load')
  for (const s of [...all.sops, rich()]) {
    const { svg } = sopGraphSvg(s)
    const text = svg.value
    t.same(
      attr(text, 'data-step'),
      s.steps.map((x) => String(x.number)),
      `${s.name}: one box per step, in order`,
    )
    t.same(drawnRoutes(text).sort(), expectedRoutes(s), `${s.name}: the routes of svc sop graph`)
    t.same(
      attr(text, 'data-terminal').length,
      s.steps.filter((x) => x.terminal).length,
      `${s.name}: terminal steps are marked`,
    )
  }
  const r = sopGraphSvg(rich()).svg.value
  t.match(r, /data-node="end"/, 'an end node when a route ends the run')
  t.match(r, /data-node="fail"/, 'a "run fails" node for the port without a target')
  t.match(r, /hot: \$\.steps\.1\.t &gt; 30/, 'switch ports are labelled with name and condition')
  t.match(r, /retry ×3/, 'retries are labelled with their count')
  // Failure routes are drawn apart from routes after success: red and dashed.
  const failing = [...r.matchAll(/<g data-route="(retry|on-failure-[a-z]+)"[^>]*>.*?<\/g>/g)]
  t.ok(failing.length >= 5, 'failure routes found')
  for (const m of failing) t.match(m[0], /stroke="#c0392b"[^>]*stroke-dasharray/, `${m[1]} is red and dashed`)
  const success = [...r.matchAll(/<g data-route="(switch|next|sequence|end|when-false)"[^>]*>.*?<\/g>/g)]
  for (const m of success) t.notMatch(m[0], /stroke-dasharray/, `${m[1]} is a solid line`)
})

t.test('titles, conditions and names are escaped', async (t) => {
  const evil = '<script>alert("x")</script> & \'q\''
  const s = rich(evil)
  s.name = '<b>name</b>'
  s.steps[1]!.switch[0]!.name = '<img src=x>'
  const { svg } = sopGraphSvg(s)
  const text = svg.value
  t.notMatch(text, /<script|<img|<b>/, 'no markup from the SOP reaches the SVG')
  t.match(
    text,
    /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt; &amp; &#39;q&#39;/,
    'the full title, escaped, in <title>',
  )
  t.match(text, /aria-label="step graph of &lt;b&gt;name&lt;\/b&gt;: 6 steps"/)
  t.match(text, /&lt;img src=x&gt;: \$\.steps/, 'port names escaped')
  // Every element is closed, so the markup is well formed (an SVG in HTML tolerates less than XML).
  const opened = [...text.matchAll(/<([a-z]+)[^>]*?(\/?)>/g)].filter((m) => m[2] !== '/').map((m) => m[1])
  const closed = [...text.matchAll(/<\/([a-z]+)>/g)].map((m) => m[1])
  t.same(closed.sort(), opened.sort(), 'each opened element is closed')
})

t.test('the layout is deterministic and its lanes never overlap', async (t) => {
  const a = sopGraphSvg(rich())
  const b = sopGraphSvg(rich())
  t.equal(a.svg.value, b.svg.value, 'the same SOP gives the same bytes')
  t.match(
    a.svg.value,
    new RegExp(`^<svg [^>]*width="${a.width}" height="${a.height}" viewBox="0 0 ${a.width} ${a.height}"`),
  )
  // A route in a lane is `M x,y H lane V y2 H x2`: no two lanes at one x may share rows.
  const lanes = [...a.svg.value.matchAll(/d="M[\d.]+,([\d.]+) H([\d.]+) V([\d.]+) H[\d.]+"/g)].map((m) => ({
    x: Number(m[2]),
    lo: Math.min(Number(m[1]), Number(m[3])),
    hi: Math.max(Number(m[1]), Number(m[3])),
  }))
  t.ok(lanes.length >= 8, `routes in lanes (${lanes.length})`)
  for (let i = 0; i < lanes.length; i++)
    for (let j = i + 1; j < lanes.length; j++) {
      const p = lanes[i]!
      const q = lanes[j]!
      if (p.x === q.x) t.ok(p.hi < q.lo || q.hi < p.lo, `lanes at x=${p.x} do not overlap`)
    }
  // Everything drawn lies inside the SVG's own size.
  for (const x of attr(a.svg.value, 'x').map(Number)) t.ok(x >= 0 && x <= a.width, `x ${x} inside`)
  for (const y of attr(a.svg.value, 'y').map(Number)) t.ok(y >= 0 && y <= a.height, `y ${y} inside`)
  // Long titles are cut in the box (the full one is in its <title>), so the width does not grow with them.
  t.equal(sopGraphSvg(rich('x'.repeat(300))).width, sopGraphSvg(rich('short')).width)
})

t.test('a one-step SOP and the examples fit a phone', async (t) => {
  const one = sopGraphSvg(sop({ steps: [step(1, { title: 'Only' })] }))
  t.same(drawnRoutes(one.svg.value).sort(), ['on-failure-fail 1->fail', 'sequence 1->end'])
  for (const s of (await loadAll(examples)).sops) {
    const g = sopGraphSvg(s)
    // 390 px less the page's margins: the examples need no scrolling on a phone.
    t.ok(g.width <= 358, `${s.name} is ${g.width} px wide`)
  }
})
