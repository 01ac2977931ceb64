// `svc sop pending|approve|deny|logs` talk to the running hub over its local API (token file,
// loopback); `svc sop run` runs one SOP in-process as a dry run (issue 3, item 8).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Type } from 'typebox'
import { createOpenAiAgent } from '../agent/openai.ts'
import { createEngine } from '../engine/index.ts'
import type { RunSummary } from '../../sops/hub-engine.ts'
import { formatDiagnostic, hasErrors } from '../../sops/parse.ts'
import { loadAll } from '../../sops/load.ts'
import type { LogEntry, RunRecord } from '../../sops/run/record.ts'
import { isParked } from '../../sops/run/states.ts'
import type { Json, Sop } from '../../sops/types.ts'
import type { Tool, ToolRegistry } from '../../tools/types.ts'
import { callHub } from './hub-client.ts'
import { chooseSopsDir } from './sops-dir.ts'
import { type CliIo, EXIT_FAIL, EXIT_OK, UsageError, UserError } from './io.ts'

export const RUNS_HELP = `usage:
  svc sop pending [--json]                      runs waiting for approval on the running hub
  svc sop approve <run_id> [--by NAME] [--note TEXT] [--decide N=yes|no]... [--json]
  svc sop deny <run_id> [--by NAME] [--note TEXT] [--json]
  svc sop logs <run_id> [--json]                the run's log
  svc sop run <name> [--payload JSON] [--approve-all] [--decide N=yes|no]... [--sops-dir DIR]
                     [--agent-url URL --agent-model NAME] [--json]
                                                dry run in this process: tools are recorders
                                                that print their resolved arguments`

interface Flags {
  positional: string[]
  json: boolean
  by?: string
  note?: string
  payload?: string
  approveAll: boolean
  sopsDir?: string
  agentUrl?: string
  agentModel?: string
  decide: Record<number, boolean>
}

const VALUE_FLAGS = new Set([
  '--by',
  '--note',
  '--payload',
  '--sops-dir',
  '--agent-url',
  '--agent-model',
  '--decide',
])

function parseFlags(sub: string, argv: string[], allowed: string[]): Flags {
  const f: Flags = { positional: [], json: false, approveAll: false, decide: {} }
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i]!
    let value: string | undefined
    const eq = a.indexOf('=')
    if (a.startsWith('--') && eq > 0 && VALUE_FLAGS.has(a.slice(0, eq))) {
      value = a.slice(eq + 1)
      a = a.slice(0, eq)
    }
    if (a === '--help' || a === '-h') throw new UsageError(RUNS_HELP)
    if (!a.startsWith('-') || a === '-') {
      f.positional.push(a)
      continue
    }
    if (!allowed.includes(a))
      throw new UsageError(`unknown option "${a}" for "sop ${sub}" (see svc sop ${sub} --help)`)
    if (a === '--json') f.json = true
    else if (a === '--approve-all') f.approveAll = true
    else {
      value ??= argv[++i]
      if (value === undefined || value === '') throw new UsageError(`${a} needs a value`)
      if (a === '--decide') {
        const m = /^(\d+)=(yes|no|true|false)$/i.exec(value)
        if (!m) throw new UsageError(`--decide takes STEP=yes|no (got "${value}")`)
        f.decide[Number(m[1])] = /^(yes|true)$/i.test(m[2]!)
      } else if (a === '--by') f.by = value
      else if (a === '--note') f.note = value
      else if (a === '--payload') f.payload = value
      else if (a === '--sops-dir') f.sopsDir = value
      else if (a === '--agent-url') f.agentUrl = value
      else if (a === '--agent-model') f.agentModel = value
    }
  }
  return f
}

function one(sub: string, f: Flags, what: string): string {
  if (f.positional.length !== 1)
    throw new UsageError(`sop ${sub} takes exactly one ${what} (got ${f.positional.length})`)
  return f.positional[0]!
}

// ---- talking to the hub -----------------------------------------------------------------------

function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m` : `${Math.floor(s / 3600)}h`
}

export function pendingText(runs: RunSummary[], now: number): string {
  if (runs.length === 0) return 'no runs waiting for approval'
  const lines: string[] = []
  for (const r of runs) {
    const g = r.gate
    lines.push(
      `${r.id}  ${r.sop}  ${r.state}  step ${g?.step ?? r.current ?? '-'}  waiting ${age(now - (g?.since ?? r.updatedAt))}  ${g?.reason ?? ''}${g?.operatorOnly ? '  [operator only]' : ''}`,
    )
    if (g?.prompt) lines.push(`    prompt: ${g.prompt}`)
    for (const q of g?.questions ?? [])
      lines.push(`    question for step ${q.step}: ${q.question}  (answer with --decide ${q.step}=yes|no)`)
    for (const req of g?.requests ?? [])
      lines.push(`    approval requested by ${req.by}${req.note ? `: ${req.note}` : ''}`)
  }
  return lines.join('\n')
}

export function logText(log: LogEntry[]): string {
  return log
    .map(
      (l) =>
        `${new Date(l.at).toISOString()}  ${l.step === 0 ? 'run   ' : `step ${String(l.step).padEnd(2)}`}  ${l.level.padEnd(5)}  ${l.msg}`,
    )
    .join('\n')
}

// ---- dry run --------------------------------------------------------------------------------

/** A recorder per tool a SOP names: prints the resolved arguments and returns them as its output. */
export interface RecordedCall {
  step: number
  call: number
  tool: string
  args: Json
}

export function recorderTools(sop: Sop, record: (c: RecordedCall) => void): ToolRegistry {
  const names = new Set<string>()
  for (const s of sop.steps) {
    for (const c of s.calls) names.add(c.tool)
    for (const t of s.tools) names.add(t)
    for (const t of s.allowTools ?? []) names.add(t)
  }
  const tools = [...names].map(
    (name): Tool => ({
      name,
      description: `dry-run recorder for ${name}`,
      schema: Type.Any(),
      run: async (args, ctx) => {
        record({ step: ctx.step, call: ctx.call, tool: name, args })
        return { ok: true, output: args }
      },
    }),
  )
  return new Map(tools.map((t) => [t.name, t]))
}

async function dryRun(f: Flags, io: CliIo): Promise<number> {
  const name = one('run', f, 'SOP name')
  const sopsDir = (await chooseSopsDir(f.sopsDir, io)).dir
  let payload: Json = {}
  if (f.payload !== undefined) {
    try {
      payload = JSON.parse(f.payload) as Json
    } catch (e) {
      throw new UsageError(`--payload is not JSON: ${(e as Error).message}`)
    }
  }
  if ((f.agentUrl === undefined) !== (f.agentModel === undefined))
    throw new UsageError('--agent-url and --agent-model go together')
  const all = await loadAll(sopsDir)
  const parsed = all.parsed.find((p) => p.named && p.sop.name === name)
  if (!parsed) throw new UserError(`no SOP named "${name}" in ${sopsDir}`)
  if (hasErrors(parsed.diagnostics)) {
    for (const d of parsed.diagnostics) io.err(formatDiagnostic(d))
    throw new UserError(`SOP "${name}" does not load; fix the errors above`)
  }
  const sop = parsed.sop
  const calls: RecordedCall[] = []
  const print = (l: string) => (f.json ? undefined : io.out(l))
  const record = (c: RecordedCall) => {
    calls.push(c)
    print(`[dry run] step ${c.step} call ${c.call}: ${c.tool} ${JSON.stringify(c.args)}`)
  }
  const dir = await mkdtemp(join(tmpdir(), 'svc-dry-run-'))
  const engine = await createEngine({
    sops: [sop],
    tools: recorderTools(sop, record),
    dbPath: dir,
    ...(f.agentUrl && f.agentModel
      ? { agent: createOpenAiAgent({ url: f.agentUrl, model: f.agentModel }) }
      : {}),
  })
  let run: RunRecord | undefined
  try {
    const d = await engine.trigger(name, {
      type: 'manual',
      source: 'svc sop run (dry run)',
      payload,
      at: Date.now(),
    })
    if (!d.runId) throw new UserError(`not started: ${d.reason}`)
    for (;;) {
      await engine.idle()
      run = await engine.getRun(d.runId)
      if (!run || !isParked(run.state) || !f.approveAll) break
      const g = run.gate!
      const missing = (g.questions ?? []).filter((q) => f.decide[q.step] === undefined)
      if (missing.length > 0) {
        print(
          `[dry run] step ${g.step}: needs answers: ${missing.map((q) => `--decide ${q.step}=yes|no ("${q.question}")`).join(', ')}`,
        )
        break
      }
      print(
        `[dry run] step ${g.step}: approved (--approve-all): ${g.reason}${g.prompt ? ` — ${g.prompt}` : ''}`,
      )
      const r = await engine.approve(run.id, { by: 'svc sop run --approve-all', decisions: f.decide })
      if (!r.ok) throw new UserError(r.error)
    }
  } finally {
    await engine.close()
    await rm(dir, { recursive: true, force: true })
  }
  if (!run) throw new UserError('the run was lost')
  if (f.json) io.out(JSON.stringify({ run, calls }, null, 2))
  else {
    io.out(logText(run.log))
    const g = run.gate
    io.out(
      run.state === 'completed'
        ? `completed; output: ${JSON.stringify(run.lastOutput)}`
        : g
          ? `stopped at step ${g.step}: ${run.state} (${g.reason})${g.prompt ? `; prompt: ${g.prompt}` : ''}${f.approveAll ? '' : '; pass --approve-all to approve every gate'}`
          : `${run.state}: ${run.error ?? ''}`,
    )
  }
  return run.state === 'completed' ? EXIT_OK : EXIT_FAIL
}

// ---- the commands ---------------------------------------------------------------------------

export async function runsCommand(sub: string, argv: string[], io: CliIo): Promise<number> {
  switch (sub) {
    case 'pending': {
      const f = parseFlags(sub, argv, ['--json'])
      if (f.positional.length > 0) throw new UsageError('sop pending takes no arguments')
      const r = (await callHub(io, 'GET', '/sop/pending')) as { runs: RunSummary[] }
      io.out(f.json ? JSON.stringify(r.runs, null, 2) : pendingText(r.runs, Date.now()))
      return EXIT_OK
    }
    case 'approve':
    case 'deny': {
      const f = parseFlags(
        sub,
        argv,
        sub === 'approve' ? ['--json', '--by', '--note', '--decide'] : ['--json', '--by', '--note'],
      )
      const id = one(sub, f, 'run id')
      const by = f.by ?? io.env.USER ?? 'operator'
      const body = {
        by,
        ...(f.note !== undefined ? { note: f.note } : {}),
        ...(sub === 'approve' && Object.keys(f.decide).length > 0 ? { decisions: f.decide } : {}),
      }
      const r = (await callHub(io, 'POST', `/sop/runs/${encodeURIComponent(id)}/${sub}`, body)) as {
        run: RunRecord
      }
      io.out(
        f.json
          ? JSON.stringify(r.run, null, 2)
          : `${sub === 'approve' ? 'approved' : 'denied'} run ${r.run.id} (${r.run.sop}): now ${r.run.state}`,
      )
      return EXIT_OK
    }
    case 'logs': {
      const f = parseFlags(sub, argv, ['--json'])
      const id = one(sub, f, 'run id')
      const r = (await callHub(io, 'GET', `/sop/runs/${encodeURIComponent(id)}/logs`)) as { log: LogEntry[] }
      io.out(f.json ? JSON.stringify(r.log, null, 2) : logText(r.log) || '(no log entries)')
      return EXIT_OK
    }
    case 'run':
      return dryRun(
        parseFlags(sub, argv, [
          '--json',
          '--payload',
          '--approve-all',
          '--sops-dir',
          '--agent-url',
          '--agent-model',
          '--decide',
        ]),
        io,
      )
    default:
      throw new UsageError(`unknown command "sop ${sub}"\n${RUNS_HELP}`)
  }
}
