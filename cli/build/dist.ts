// The hub as one bundled JavaScript program (`npm run build` → dist/): `node dist/main.js hub`
// runs without tsx, whose loader thread is ~31-35 MB of resident memory before any of our code
// loads, and as a few chunks instead of ~1,000 modules, which is what brings the idle hub under
// 80 MB (bench/hub.bench.ts prints each way). esbuild bundles straight from the TypeScript
// sources; `npm run typecheck` is what checks the types. Dynamic imports (the bridge, the chain,
// attestation, listings) stay separate chunks, loaded only when the config asks for them.
// Packages with native addons or files of their own stay outside the bundle and load from
// node_modules, so dist/ must sit in the project folder (or have node_modules beside it).
import { cp, mkdir, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { fail, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

export type DistBuild = Result<{ outDir: string; entry: string }>

/** Native addons (LevelDB, serial ports, libsecp256k1) and packages that read their own files. */
export const EXTERNAL = [
  'classic-level',
  'level',
  'serialport',
  '@serialport/*',
  'johnny-five',
  'secp256k1',
  'viem',
]

/** Bundles the `svc` CLI (and every module `svc hub` loads) into `outDir`. */
export async function buildDist(outDir: string): Promise<DistBuild> {
  try {
    await rm(outDir, { recursive: true, force: true })
    await build({
      entryPoints: { main: join(root, 'cli', 'main.ts') },
      outdir: outDir,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      minifySyntax: true,
      minifyWhitespace: true,
      sourcemap: 'linked',
      external: EXTERNAL,
      // CommonJS packages inside an ES module bundle still call require().
      banner: {
        js: "import { createRequire as __svcRequire } from 'node:module'; const require = __svcRequire(import.meta.url);",
      },
      logLevel: 'silent',
    })
  } catch (err) {
    // The repository's own sources did not bundle: a bug here, not the caller's.
    return fail('INTERNAL', `esbuild failed: ${errorText(err)}`)
  }
  await mkdir(outDir, { recursive: true })
  await writeFile(join(outDir, 'package.json'), '{ "type": "module" }\n')
  // The console's stylesheet and script, where its chunk looks for them (`./static/` beside it).
  await cp(join(root, 'hub', 'console', 'static'), join(outDir, 'static'), { recursive: true })
  // Outside the project folder the externals need node_modules beside the bundle.
  if (!outDir.startsWith(root)) {
    await symlink(join(root, 'node_modules'), join(outDir, 'node_modules'), 'dir').catch(
      (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err
      },
    )
  }
  return { ok: true, outDir, entry: join(outDir, 'main.js') }
}
