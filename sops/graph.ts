// The step graph: for each step, where a run can go after it (sops/RUNTIME.md, "Routing").
// Data only; the CLI prints it as text or JSON.
import type { Sop, Step } from './types.ts'

export type Route =
  /** `when:` is false: fall through to the next step in order (null = the run ends). */
  | { kind: 'when-false'; condition: string; target: number | null }
  /** A switch port; `target` null means a match fails the run. */
  | { kind: 'switch'; port: string; condition: string; target: number | null }
  /** No switch port matched: the run ends. */
  | { kind: 'switch-none'; target: null }
  | { kind: 'next'; target: number }
  /** `terminal: true`: the run completes after this step. */
  | { kind: 'end'; target: null }
  /** The next step in order (null past the last step: the run completes). */
  | { kind: 'sequence'; target: number | null }
  | { kind: 'retry'; count: number; target: number }
  | { kind: 'on-failure-goto'; target: number }
  | { kind: 'on-failure-fail'; target: null }

export interface StepNode {
  step: number
  title: string
  kind: Step['kind']
  terminal: boolean
  /** Steps this one depends on (depends_on). */
  dependsOn: number[]
  /** Where the run goes after the step completes, in the order the engine tries them. */
  routes: Route[]
  /** Where the run goes when the step fails. */
  onFailure: Route
}

export function stepRoutes(sop: Sop): StepNode[] {
  const count = sop.steps.length
  return sop.steps.map((s) => {
    const following = s.number < count ? s.number + 1 : null
    const routes: Route[] = []
    if (s.when !== undefined)
      routes.push({ kind: 'when-false', condition: s.when, target: s.terminal ? null : following })
    if (s.switch.length > 0) {
      for (const p of s.switch)
        routes.push({ kind: 'switch', port: p.name, condition: p.condition, target: p.target })
      // A catch-all port (empty condition) means some port always matches.
      if (!s.switch.some((p) => p.condition.trim() === '')) routes.push({ kind: 'switch-none', target: null })
    } else if (s.next !== undefined) routes.push({ kind: 'next', target: s.next })
    else if (s.terminal) routes.push({ kind: 'end', target: null })
    else routes.push({ kind: 'sequence', target: following })
    const f = s.onFailure
    const onFailure: Route =
      f.kind === 'retry'
        ? { kind: 'retry', count: f.count, target: s.number }
        : f.kind === 'goto'
          ? { kind: 'on-failure-goto', target: f.step }
          : { kind: 'on-failure-fail', target: null }
    return {
      step: s.number,
      title: s.title,
      kind: s.kind,
      terminal: s.terminal,
      dependsOn: [...s.dependsOn],
      routes,
      onFailure,
    }
  })
}

/** One route as `svc sop graph` prints it. */
export function routeText(r: Route): string {
  const to = (t: number | null, none: string): string => (t === null ? none : `step ${t}`)
  switch (r.kind) {
    case 'when-false':
      return `when not (${r.condition}) -> ${to(r.target, 'end')}`
    case 'switch':
      return `switch ${r.port} [${r.condition || 'always'}] -> ${to(r.target, 'fail (port has no target)')}`
    case 'switch-none':
      return 'no port matches -> end'
    case 'next':
      return `next -> step ${r.target}`
    case 'end':
      return 'terminal -> end'
    case 'sequence':
      return `then -> ${to(r.target, 'end')}`
    case 'retry':
      return `on failure: retry up to ${r.count} times, then fail`
    case 'on-failure-goto':
      return `on failure -> step ${r.target}`
    case 'on-failure-fail':
      return 'on failure -> fail'
  }
}

/** The graph as text, one block per step. */
export function graphText(sop: Sop): string {
  const nodes = stepRoutes(sop)
  const lines: string[] = [`${sop.name}: ${nodes.length} step${nodes.length === 1 ? '' : 's'}`]
  for (const n of nodes) {
    const tags = [n.kind !== 'execute' ? n.kind : '', n.terminal ? 'terminal' : ''].filter(Boolean)
    lines.push(`[${n.step}] ${n.title}${tags.length ? ` (${tags.join(', ')})` : ''}`)
    if (n.dependsOn.length > 0)
      lines.push(`    depends on: ${n.dependsOn.map((d) => `step ${d}`).join(', ')}`)
    for (const r of n.routes) lines.push(`    ${routeText(r)}`)
    lines.push(`    ${routeText(n.onFailure)}`)
  }
  const terminals = nodes.filter((n) => n.terminal).map((n) => n.step)
  lines.push(
    `terminal steps: ${terminals.length ? terminals.join(', ') : 'none (the run completes after the last step)'}`,
  )
  return lines.join('\n')
}
