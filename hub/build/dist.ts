// The hub as plain JavaScript (tsconfig.build.json → dist/): `node dist/hub/cli/main.js hub` runs
// without tsx, whose loader thread is ~31-35 MB of resident memory before any of our code loads
// (bench/hub.bench.ts prints both). Used by the build test and the bench, which build into a temp
// folder so they measure the source as it is now; production builds into dist/ (`npm run build`).
import { spawn } from 'node:child_process'
import { mkdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))

export type DistBuild = { ok: true; outDir: string; entry: string } | { ok: false; error: string }

/** Compiles the `svc` CLI (and every module `svc hub` loads) into `outDir`. */
export async function buildDist(outDir: string): Promise<DistBuild> {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const res = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', outDir], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    child.on('error', reject)
    child.on('exit', (code) => resolve({ code, out }))
  })
  if (res.code !== 0) return { ok: false, error: `tsc -p tsconfig.build.json failed (exit ${res.code}):\n${res.out.trim()}` }
  // Outside the repository the output needs what the repository gives dist/: ESM, and node_modules.
  if (!outDir.startsWith(root)) {
    await mkdir(outDir, { recursive: true })
    await writeFile(join(outDir, 'package.json'), '{ "type": "module" }\n')
    await symlink(join(root, 'node_modules'), join(outDir, 'node_modules'), 'dir').catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err
    })
  }
  return { ok: true, outDir, entry: join(outDir, 'hub', 'cli', 'main.js') }
}
