// `svc sop pending|approve|deny|logs` talk to the running hub over its local API (token file,
// loopback); `svc sop run` runs one SOP in-process as a dry run.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Type } from 'typebox'
import { createOpenAiAgent } from '../hub/agent/openai.ts'
import { createEngine } from '../hub/engine/index.ts'
import type { RunSummary } from '../sops/hub-engine.ts'
import { formatDiagnostic, hasErrors } from '../sops/parse.ts'
import { loadAll } from '../sops/load.ts'
import type { RunRecord } from '../sops/run/record.ts'
import { isParked } from '../sops/run/states.ts'
import type { Json, Sop } from '../sops/types.ts'
import type { Tool, ToolRegistry } from '../tools/types.ts'
import { callHub } from './hub-client.ts'
import { chooseSopsDir } from './sops-dir.ts'
import { logText, pendingText } from './run-text.ts'
import { HISTORY_COMMANDS, HISTORY_HELP, historyCommand } from './sop-history.ts'
import { type Flags, one, parseFlags as parseWith, payloadFlag } from './sop-flags.ts'
import { type CliIo, EXIT_FAIL, EXIT_OK, UsageError, UserError } from './io.ts'

export const RUNS_HELP = `usage:
  svc sop pending [--json]                      runs waiting for approval on the running hub
  svc sop approve <run_id> [--by NAME] [--note TEXT] [--decide N=yes|no]... [--json]
  svc sop deny <run_id> [--by NAME] [--note TEXT] [--json]
${HISTORY_HELP}
  svc sop run <name> [--payload JSON] [--approve-all] [--decide N=yes|no]... [--sops-dir DIR]
                     [--agent-url URL --agent-model NAME] [--json]
                                                dry run in this process: tools are recorders
                                                that print their resolved arguments`

// ---- talking to the hub -----------------------------------------------------------------------

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
  const payload = payloadFlag(f) as Json
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

const parseFlags = (sub: string, argv: string[], allowed: string[]): Flags =>
  parseWith(sub, argv, allowed, RUNS_HELP)

// ---- the commands ---------------------------------------------------------------------------

export async function runsCommand(sub: string, argv: string[], io: CliIo): Promise<number> {
  // Asked for, help is the answer (stdout, exit 0), not a usage error.
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(HISTORY_COMMANDS.has(sub) ? `usage:\n${HISTORY_HELP}` : RUNS_HELP)
    return EXIT_OK
  }
  if (HISTORY_COMMANDS.has(sub)) return historyCommand(sub, argv, io)
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
