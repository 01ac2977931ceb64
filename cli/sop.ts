// `svc sop list|validate|show|graph`: the SOP format on the command line (sops/README.md, "Commands").
// Read-only, no daemon. Run commands (pending, approve, deny, run; runs, status, logs, trigger,
// held via sop-history.ts) go to sop-runs.ts.
import { isAbsolute, resolve } from 'node:path'
import { graphText, stepRoutes } from '../sops/graph.ts'
import { exists, isDir, loadAll, readSopDir, SOP_MD, SOP_TOML } from '../sops/load.ts'
import { formatDiagnostic, hasErrors, type ParsedSop, sortDiagnostics } from '../sops/parse.ts'
import type { Diagnostic, Sop, Step } from '../sops/types.ts'
import { triggerText } from '../sops/trigger-text.ts'
import { type CliIo, type Command, EXIT_FAIL, EXIT_OK, EXIT_USAGE, UsageError, UserError } from './io.ts'
import { runsCommand } from './sop-runs.ts'
import { chooseSopsDir, type SopsDirChoice } from './sops-dir.ts'

const RUN_COMMANDS = new Set([
  'pending',
  'approve',
  'deny',
  'logs',
  'run',
  'runs',
  'status',
  'trigger',
  'held',
])

export const SOP_HELP = `usage: svc sop <command> [options]

commands (read SOP directories; no hub needed, but they read the running hub's directory):
  list                     the SOPs in the sops directory, with any load errors
  validate [<name|dir>]    check one SOP (by name, or its directory), a directory of SOPs,
                           or every SOP when none is given; exit 0 valid, 1 invalid
  show <name|dir>          settings, triggers and parsed steps
  graph <name|dir>         the step graph: routes after each step, failures, terminal steps

commands (the running hub's runs; svc sop <command> --help for their options):
  runs                     run history, newest first: --sop, --state, --since 30m|2h|7d|ISO,
                           a page at a time (--limit, --cursor)
  status <run_id>          a run whole: trigger payload, steps' input, output, result and
                           duration, approvals, state
  logs <run_id>            the run's log
                           (runs, status, logs also read the stored records when no hub runs)
  trigger <name>           a real run on the running hub (--payload JSON); prints its id
  held                     triggers kept by the hold and parallel policies, per SOP, with ages
  pending                  runs waiting for approval
  approve <run_id>, deny <run_id>
  run <name>               a dry run in this process: tools only record their arguments

options:
  --sops-dir DIR   where SOPs live (default: $SVC_SOPS_DIR, else the running hub's directory,
                   else hub.toml's [hub] sops_dir, else ~/.svc/sops)
  --json           machine-readable output on stdout
  -h, --help       this help`

interface Options {
  sopsDir: string
  /** Where sopsDir came from (sops-dir.ts), for messages. */
  from: SopsDirChoice['from']
  json: boolean
  positional: string[]
  cwd?: string
}

function parseOptions(argv: string[]): { sopsFlag: string | undefined; json: boolean; positional: string[] } {
  let sopsDir: string | undefined
  let json = false
  const positional: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    if (a === '--json') json = true
    else if (a === '--sops-dir') {
      const v = argv[++i]
      if (v === undefined || v === '') throw new UsageError('--sops-dir needs a directory')
      sopsDir = v
    } else if (a.startsWith('--sops-dir=')) {
      sopsDir = a.slice('--sops-dir='.length)
      if (sopsDir === '') throw new UsageError('--sops-dir needs a directory')
    } else if (a.startsWith('-') && a !== '-')
      throw new UsageError(`unknown option "${a}" (see svc sop --help)`)
    else positional.push(a)
  }
  return { sopsFlag: sopsDir, json, positional }
}

function fromText(from: SopsDirChoice['from']): string {
  return from === 'the hub config' ? 'no hub is running; the directory `svc hub` would load' : `from ${from}`
}

function looksLikePath(arg: string): boolean {
  return arg.includes('/') || arg.includes('\\') || arg.startsWith('.')
}

/** What a `<name|dir>` argument selects: parsed SOPs and every diagnostic that concerns them. */
interface Selection {
  parsed: ParsedSop[]
  diagnostics: Diagnostic[]
  /** Whether any SOP directory was found at all (an empty selection is an error). */
  label: string
}

async function selectAll(dir: string): Promise<Selection> {
  const all = await loadAll(dir)
  return { parsed: all.parsed, diagnostics: all.diagnostics, label: dir }
}

async function select(arg: string, opts: Options): Promise<Selection> {
  const asPath = isAbsolute(arg) ? arg : resolve(opts.cwd ?? '.', arg)
  if (await isDir(asPath)) {
    if ((await exists(resolve(asPath, SOP_TOML))) || (await exists(resolve(asPath, SOP_MD)))) {
      const r = await readSopDir(asPath)
      return { parsed: r.parsed ? [r.parsed] : [], diagnostics: r.diagnostics, label: asPath }
    }
    return selectAll(asPath)
  }
  if (looksLikePath(arg)) throw new UserError(`no directory at ${asPath}`)
  const all = await loadAll(opts.sopsDir)
  const parsed = all.parsed.filter((p) => p.named && p.sop.name === arg)
  if (parsed.length === 0) {
    if (!(await isDir(opts.sopsDir)))
      throw new UserError(`no SOP named "${arg}": sops directory ${opts.sopsDir} does not exist`)
    const unnamed = all.diagnostics.filter(
      (d) =>
        d.severity === 'error' &&
        !all.parsed.some((p) => p.named && (p.sop.tomlPath === d.file || p.sop.mdPath === d.file)),
    )
    const files = new Set(unnamed.map((d) => d.file)).size
    const hint =
      files > 0
        ? `; ${files} file${files === 1 ? '' : 's'} there failed to load, svc sop list shows why`
        : '; svc sop list shows what is there'
    throw new UserError(`no SOP named "${arg}" in ${opts.sopsDir}${hint}`)
  }
  const files = new Set(parsed.flatMap((p) => [p.sop.tomlPath, p.sop.mdPath]))
  return { parsed, diagnostics: all.diagnostics.filter((d) => files.has(d.file)), label: arg }
}

function printDiagnostics(io: CliIo, list: readonly Diagnostic[]): void {
  for (const d of sortDiagnostics([...list])) io.err(formatDiagnostic(d))
}

function summary(list: readonly Diagnostic[]): string {
  const e = list.filter((d) => d.severity === 'error').length
  const w = list.length - e
  return `${e} error${e === 1 ? '' : 's'}, ${w} warning${w === 1 ? '' : 's'}`
}

function stepText(s: Step): string[] {
  const out = [`  ${s.number}. ${s.title}${s.kind !== 'execute' ? ` [${s.kind}]` : ''}`]
  const p = (k: string, v: string): void => void out.push(`       ${k}: ${v}`)
  if (s.body) for (const line of s.body.split('\n')) out.push(`       ${line}`)
  if (s.tools.length) p('tools', s.tools.join(', '))
  if (s.allowTools) p('allow-tools', s.allowTools.join(', '))
  if (s.denyTools.length) p('deny-tools', s.denyTools.join(', '))
  if (s.requiresConfirmation) p('requires_confirmation', 'true')
  for (const c of s.calls) p('call', `${c.tool} ${JSON.stringify(c.args)}`)
  if (s.input) p('input', JSON.stringify(s.input))
  if (s.output) p('output', JSON.stringify(s.output))
  if (s.when !== undefined) p('when', s.when)
  if (s.switch.length)
    p('switch', s.switch.map((x) => `${x.name}>${x.condition}>${x.target ?? ''}`).join('; '))
  if (s.next !== undefined) p('next', String(s.next))
  if (s.dependsOn.length) p('depends_on', s.dependsOn.join(', '))
  if (s.terminal) p('terminal', 'true')
  if (s.onFailure.kind !== 'fail')
    p('on_failure', s.onFailure.kind === 'retry' ? `retry:${s.onFailure.count}` : `goto:${s.onFailure.step}`)
  if (s.mode) p('mode', s.mode)
  if (s.agent) p('agent', s.agent)
  if (s.prompt) p('prompt', s.prompt)
  if (s.decide) p('decide', s.decide)
  if (s.unlessDecided !== undefined) p('unless_decided', String(s.unlessDecided))
  return out
}

function showText(sop: Sop): string {
  const lines = [
    `${sop.name}${sop.version ? ` (version ${sop.version})` : ''}`,
    `  ${sop.description}`,
    `  priority ${sop.priority}, mode ${sop.executionMode}, admission ${sop.admissionPolicy}, max_concurrent ${sop.maxConcurrent}, cooldown ${sop.cooldownSecs}s`,
    `  agent: ${sop.agent ?? '(none)'}${sop.package ? `, package: ${sop.package}` : ''}`,
    `  dir: ${sop.dir}`,
    `triggers:`,
    ...(sop.triggers.length
      ? sop.triggers.map((t, i) => `  ${i + 1}. ${triggerText(t)}`)
      : ['  (none: start it with sop_execute)']),
    `steps:`,
    ...sop.steps.flatMap(stepText),
  ]
  return lines.join('\n')
}

async function list(opts: Options, io: CliIo): Promise<number> {
  if (opts.positional.length > 0) throw new UsageError(`list takes no arguments, got "${opts.positional[0]}"`)
  const all = await loadAll(opts.sopsDir)
  const rows = all.parsed
    .filter((p) => p.named)
    .sort((a, b) => (a.sop.name < b.sop.name ? -1 : a.sop.name > b.sop.name ? 1 : 0))
    .map((p) => ({
      name: p.sop.name,
      valid: !hasErrors(p.diagnostics),
      priority: p.sop.priority,
      executionMode: p.sop.executionMode,
      triggers: p.sop.triggers.map((t) => t.type),
      steps: p.sop.steps.length,
      package: p.sop.package ?? null,
      dir: p.sop.dir,
      description: p.sop.description,
    }))
  const failed = hasErrors(all.diagnostics)
  if (opts.json) {
    io.out(JSON.stringify({ sopsDir: opts.sopsDir, sops: rows, diagnostics: all.diagnostics }, null, 2))
    return failed ? EXIT_FAIL : EXIT_OK
  }
  if (rows.length === 0) io.out(`no SOPs in ${opts.sopsDir} (${fromText(opts.from)})`)
  else {
    const table = [
      ['NAME', 'STATUS', 'MODE', 'PRIORITY', 'TRIGGERS', 'STEPS', 'PACKAGE'],
      ...rows.map((r) => [
        r.name,
        r.valid ? 'ok' : 'INVALID',
        r.executionMode,
        r.priority,
        r.triggers.join(',') || '-',
        String(r.steps),
        r.package ?? '-',
      ]),
    ]
    const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => (row[c] ?? '').length)))
    io.out(
      table
        .map((row) =>
          row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c] ?? 0))).join('  '),
        )
        .join('\n'),
    )
  }
  printDiagnostics(io, all.diagnostics)
  if (all.diagnostics.length) io.err(summary(all.diagnostics))
  return failed ? EXIT_FAIL : EXIT_OK
}

async function validate(opts: Options, io: CliIo): Promise<number> {
  if (opts.positional.length > 1) throw new UsageError('validate takes one SOP name or directory')
  const arg = opts.positional[0]
  const sel = arg === undefined ? await selectAll(opts.sopsDir) : await select(arg, opts)
  // A load failure is never a silent success (sops/FORMAT.md, "Where SOPs live"): nothing found is a failure too.
  const nothing = sel.parsed.length === 0 && !hasErrors(sel.diagnostics)
  const valid = !nothing && !hasErrors(sel.diagnostics)
  if (opts.json) {
    io.out(
      JSON.stringify(
        {
          valid,
          sops: sel.parsed.map((p) => ({
            name: p.sop.name,
            dir: p.sop.dir,
            valid: !hasErrors(p.diagnostics),
          })),
          diagnostics: sel.diagnostics,
        },
        null,
        2,
      ),
    )
    return valid ? EXIT_OK : EXIT_FAIL
  }
  printDiagnostics(io, sel.diagnostics)
  if (nothing) {
    io.err(`no SOPs found in ${sel.label}`)
    return EXIT_FAIL
  }
  if (valid) {
    const names = sel.parsed.map((p) => p.sop.name)
    io.out(`valid: ${names.join(', ')}${sel.diagnostics.length ? ` (${summary(sel.diagnostics)})` : ''}`)
    return EXIT_OK
  }
  io.err(`invalid: ${summary(sel.diagnostics)}`)
  return EXIT_FAIL
}

async function one(opts: Options, verb: string): Promise<{ parsed: ParsedSop; diagnostics: Diagnostic[] }> {
  if (opts.positional.length !== 1) throw new UsageError(`${verb} takes one SOP name or directory`)
  const sel = await select(opts.positional[0] as string, opts)
  const parsed = sel.parsed[0]
  if (!parsed) {
    const first = sel.diagnostics.find((d) => d.severity === 'error')
    throw new UserError(first ? `cannot ${verb}: ${formatDiagnostic(first)}` : `no SOP found in ${sel.label}`)
  }
  if (sel.parsed.length > 1) {
    if (sel.parsed.every((p) => p.sop.name === parsed.sop.name))
      throw new UserError(
        `${sel.parsed.length} SOPs are named "${parsed.sop.name}": ${sel.parsed.map((p) => p.sop.dir).join(', ')}`,
      )
    throw new UserError(`${sel.label} holds ${sel.parsed.length} SOPs; name one`)
  }
  return { parsed, diagnostics: sel.diagnostics }
}

async function show(opts: Options, io: CliIo): Promise<number> {
  const { parsed, diagnostics } = await one(opts, 'show')
  const valid = !hasErrors(diagnostics)
  if (opts.json) io.out(JSON.stringify({ valid, sop: parsed.sop, diagnostics }, null, 2))
  else {
    io.out(showText(parsed.sop))
    printDiagnostics(io, diagnostics)
  }
  return valid ? EXIT_OK : EXIT_FAIL
}

async function graph(opts: Options, io: CliIo): Promise<number> {
  const { parsed, diagnostics } = await one(opts, 'graph')
  const valid = !hasErrors(diagnostics)
  if (opts.json)
    io.out(
      JSON.stringify({ valid, name: parsed.sop.name, steps: stepRoutes(parsed.sop), diagnostics }, null, 2),
    )
  else {
    io.out(graphText(parsed.sop))
    printDiagnostics(io, diagnostics)
  }
  return valid ? EXIT_OK : EXIT_FAIL
}

export const command: Command = async (argv, io) => {
  const [sub, ...rest] = argv
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    io.out(SOP_HELP)
    return sub === undefined ? EXIT_USAGE : EXIT_OK
  }
  if (RUN_COMMANDS.has(sub)) return runsCommand(sub, rest, io)
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(SOP_HELP)
    return EXIT_OK
  }
  if (!['list', 'validate', 'show', 'graph'].includes(sub))
    throw new UsageError(`unknown command "${sub}" (see svc sop --help)`)
  const { sopsFlag, ...parsed } = parseOptions(rest)
  const chosen = await chooseSopsDir(sopsFlag, io)
  const opts: Options = { ...parsed, sopsDir: chosen.dir, from: chosen.from, cwd: io.cwd }
  switch (sub) {
    case 'list':
      return list(opts, io)
    case 'validate':
      return validate(opts, io)
    case 'show':
      return show(opts, io)
    case 'graph':
      return graph(opts, io)
    default:
      throw new UsageError(`unknown command "${sub}" (see svc sop --help)`)
  }
}
