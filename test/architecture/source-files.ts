// The repository's own TypeScript source, as the architecture tests read it: every file git
// tracks or would track, less tests, benches and dependencies.
import { execFileSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..')

export const sourceFiles: string[] = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '*.ts'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter(
    (f) => f !== '' && !f.startsWith('test/') && !f.startsWith('bench/') && !f.startsWith('node_modules/'),
  )
