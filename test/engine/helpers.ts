// Small builders for SOPs and in-memory tools, so each engine test states only what it tests.
import { randomBytes } from 'node:crypto'
import { Type } from 'typebox'
import { fail } from '../../errors/codes.ts'
import { blankStep } from '../../sops/blank-step.ts'
import type { TriggerEvent } from '../../sops/engine-api.ts'
import type { Json, Sop, Step } from '../../sops/types.ts'
import type { Tool, ToolContext, ToolRegistry } from '../../tools/types.ts'

const origin = { file: 'SOP.md', line: 1 }

export function step(n: number, over: Partial<Step> = {}): Step {
  return blankStep(n, `step ${n}`, origin, over)
}

/** A call of the `echo` tool: its output is its (resolved) args. */
export function call(tool: string, args: Json = {}) {
  return { tool, args, origin }
}

export function sop(over: Partial<Sop> & { steps: Step[] }): Sop {
  return {
    name: 'test-sop',
    description: 'a test SOP',
    priority: 'normal',
    executionMode: 'auto',
    cooldownSecs: 0,
    maxConcurrent: 1,
    admissionPolicy: 'parallel',
    triggers: [{ type: 'manual', origin }],
    dir: '/nowhere',
    tomlPath: '/nowhere/SOP.toml',
    mdPath: '/nowhere/SOP.md',
    ...over,
  }
}

export function event(payload: string | Json = {}, at = Date.now()): TriggerEvent {
  return { type: 'manual', source: 'test', payload, at }
}

export interface Recorded {
  tool: string
  args: Json
  ctx: Omit<ToolContext, 'signal'>
}

/**
 * In-memory tools: echo (returns args), fail (always fails), flaky (fails the first N calls),
 * block (blocks until released), countdown (returns `{ left }`, one less on each call, from
 * `countdownFrom` - 1 down to 0 and staying there).
 */
export function memoryTools(opts: { flakyFailures?: number; countdownFrom?: number } = {}) {
  const calls: Recorded[] = []
  let flaky = opts.flakyFailures ?? 0
  let left = opts.countdownFrom ?? 3
  const blocked: (() => void)[] = []
  const rec = (tool: string, args: Json, ctx: ToolContext) =>
    calls.push({
      tool,
      args,
      ctx: {
        runId: ctx.runId,
        sop: ctx.sop,
        step: ctx.step,
        call: ctx.call,
        idempotencyKey: ctx.idempotencyKey,
      },
    })
  const tools: Tool[] = [
    {
      name: 'echo',
      description: 'returns its args',
      schema: Type.Any(),
      run: async (args, ctx) => (rec('echo', args, ctx), { ok: true, output: args }),
    },
    {
      name: 'other',
      description: 'returns its args',
      schema: Type.Any(),
      run: async (args, ctx) => (rec('other', args, ctx), { ok: true, output: args }),
    },
    {
      name: 'fail',
      description: 'always fails',
      schema: Type.Any(),
      run: async (args, ctx) => (rec('fail', args, ctx), fail('UPSTREAM_FAILED', 'it broke')),
    },
    {
      name: 'throws',
      description: 'throws',
      schema: Type.Any(),
      run: async () => {
        throw new Error('kaboom')
      },
    },
    {
      name: 'flaky',
      description: 'fails the first N calls',
      schema: Type.Any(),
      run: async (args, ctx) => {
        rec('flaky', args, ctx)
        if (flaky > 0) {
          flaky--
          return fail('UPSTREAM_FAILED', 'flaky failure')
        }
        return { ok: true, output: args }
      },
    },
    {
      name: 'typed',
      description: 'needs { n: number }',
      schema: Type.Object({ n: Type.Number() }),
      run: async (args, ctx) => (rec('typed', args, ctx), { ok: true, output: args }),
    },
    {
      name: 'countdown',
      description: 'one less on each call',
      schema: Type.Any(),
      run: async (args, ctx) => {
        rec('countdown', args, ctx)
        left = Math.max(0, left - 1)
        return { ok: true, output: { left } }
      },
    },
    {
      name: 'block',
      description: 'waits until released',
      schema: Type.Any(),
      run: (args, ctx) => {
        rec('block', args, ctx)
        return new Promise((resolve) => blocked.push(() => resolve({ ok: true, output: args })))
      },
    },
  ]
  const registry: ToolRegistry = new Map(tools.map((t) => [t.name, t]))
  return {
    registry,
    calls,
    /** Releases every blocked call; returns how many were waiting. */
    release(): number {
      const n = blocked.length
      for (const r of blocked.splice(0)) r()
      return n
    },
    blockedCount: () => blocked.length,
  }
}

/**
 * `n` characters deflate cannot shrink: the history log deflates its batches
 * (hub/engine/log/frames.ts), so a test that needs records of a size pads with these.
 */
export function incompressible(n: number): string {
  return randomBytes(Math.ceil((n * 3) / 4) + 3)
    .toString('base64')
    .slice(0, n)
}

/**
 * A SOP whose one step echoes `pad` incompressible characters: each run's records take about that
 * much of the history log, so a test fills small segments with a known number of runs.
 */
export function paddedSop(name: string, pad = 600, over: Partial<Sop> = {}): Sop {
  return sop({
    name,
    maxConcurrent: 100,
    ...over,
    steps: [step(1, { calls: [call('echo', { pad: incompressible(pad) })] })],
  })
}
