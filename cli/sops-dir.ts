// Which SOP directory `svc sop list|validate|show|graph|run` read: the one the running hub loads
// unless told otherwise, so the commands see what runs. In order:
//   --sops-dir DIR  >  $SVC_SOPS_DIR  >  the running hub's (its API info file)  >  hub.toml's
//   [hub] sops_dir, else ~/.svc/sops (what `svc hub` would load).
// When a flag or the environment picks another directory than the running hub's, a note on
// stderr says so: the listing is then not what the hub runs.
import { isAbsolute, resolve } from 'node:path'
import { readApiInfo } from '../hub/api/token.ts'
import { svcPaths } from '../hub/paths.ts'
import { processAlive } from './hub-client.ts'
import type { CliIo } from './io.ts'

export interface SopsDirChoice {
  dir: string
  /** Where it came from, for messages. */
  from: '--sops-dir' | 'SVC_SOPS_DIR' | 'the running hub' | 'the hub config'
}

/** The running hub's SOP directory, if a hub is running (its info file names a live process). */
export async function runningHubSopsDir(io: CliIo): Promise<{ dir: string; pid: number } | null> {
  const info = await readApiInfo(svcPaths(io.env).apiInfo)
  if (!info.ok || info.value.sopsDir === undefined || info.value.pid === undefined) return null
  if (!processAlive(info.value.pid)) return null
  return { dir: info.value.sopsDir, pid: info.value.pid }
}

export async function chooseSopsDir(flag: string | undefined, io: CliIo): Promise<SopsDirChoice> {
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(io.cwd, p))
  const envDir = io.env.SVC_SOPS_DIR
  const hub = await runningHubSopsDir(io)
  const given =
    flag !== undefined
      ? ({ dir: abs(flag), from: '--sops-dir' } as const)
      : envDir
        ? ({ dir: abs(envDir), from: 'SVC_SOPS_DIR' } as const)
        : null
  if (given) {
    if (hub && resolve(hub.dir) !== given.dir)
      io.err(
        `svc sop: note: the running hub (pid ${hub.pid}) loads SOPs from ${hub.dir}, not ${given.dir} (${given.from})`,
      )
    return given
  }
  if (hub) return { dir: hub.dir, from: 'the running hub' }
  const { loadConfig } = await import('../hub/daemon/config.ts')
  const cfg = await loadConfig(undefined, io.env)
  return { dir: cfg.ok ? cfg.config.sopsDir : svcPaths(io.env).sops, from: 'the hub config' }
}
