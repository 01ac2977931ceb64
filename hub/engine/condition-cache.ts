// The conditions the run driver evaluates (`when:` routes, decide: questions written as a
// condition), each source parsed once: the same few strings come back for every run.
import { type Condition, evaluate, parseCondition } from '../../sops/conditions.ts'
import type { Json } from '../../sops/types.ts'

export class ConditionCache {
  private readonly conditions = new Map<string, Condition | null>()

  private parsed(src: string): Condition | null {
    let c = this.conditions.get(src)
    if (c === undefined) {
      const p = parseCondition(src)
      c = p.ok ? p.condition : null
      if (this.conditions.size < 10_000) this.conditions.set(src, c)
    }
    return c
  }

  readonly evaluate = (src: string, payload: Json): boolean => {
    const c = this.parsed(src)
    return c !== null && evaluate(c, payload)
  }

  isCondition(src: string): boolean {
    return src.trim() !== '' && this.parsed(src) !== null
  }
}
