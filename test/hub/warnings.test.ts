// What a SOP author writes never stops the hub, and nothing is skipped silently: every skipped
// trigger and every inert one is logged with its file and line.
import t from 'tap'
import { join } from 'node:path'
import { mkdir, writeFile } from 'node:fs/promises'
import { parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import type { Log } from '../../hub/log.ts'
import { tempDir } from '../helpers/tmp.ts'

function recordingLog(): Log & { lines: { level: string; obj: unknown; msg: string }[] } {
  const lines: { level: string; obj: unknown; msg: string }[] = []
  const at = (level: string) => (obj: unknown, msg?: string) =>
    void lines.push({ level, obj, msg: typeof obj === 'string' ? obj : (msg ?? '') })
  return {
    lines,
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    debug: at('debug'),
  } as unknown as Log & { lines: typeof lines }
}

t.test('inert and broken triggers are logged with file:line; the hub runs the rest', async (t) => {
  const home = await tempDir(t)
  const sopsDir = join(home, 'sops')
  await mkdir(join(sopsDir, 'odd'), { recursive: true })
  await writeFile(
    join(sopsDir, 'odd', 'SOP.toml'),
    [
      '[sop]',
      'name = "odd"',
      'description = "d"',
      'execution_mode = "deterministic"',
      'agent = "a"',
      '',
      '[[triggers]]',
      'type = "amqp"',
      'routing_key = "orders.*"',
      '',
      '[[triggers]]',
      'type = "filesystem"',
      `path = "${join(home, 'no-such-folder')}/*.csv"`,
      '',
      '[[triggers]]',
      'type = "webhook"',
      'path = "/ok"',
      '',
    ].join('\n'),
  )
  await writeFile(
    join(sopsDir, 'odd', 'SOP.md'),
    '# odd\n\n## Steps\n\n1. **Pause**\n   - call: {"tool":"wait","args":{"ms":1}}\n',
  )
  await mkdir(join(sopsDir, 'empty'), { recursive: true })
  await writeFile(join(sopsDir, 'empty', 'SOP.toml'), 'this is not toml = = =')

  const cfg = parseConfig(
    `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nport = 0\n[webhook]\nport = 0\n`,
    null,
    { SVC_HOME: home },
  )
  if (!cfg.ok) throw new Error(cfg.error)
  const log = recordingLog()
  const hub = await startHub(cfg.config, log)
  t.teardown(() => hub.close())
  t.same(
    hub.sops.map((s) => s.name),
    ['odd'],
  )
  const text = log.lines.map((l) => `${l.level} ${l.msg}`).join('\n')
  t.match(
    text,
    new RegExp(
      `warn ${join(sopsDir, 'odd', 'SOP.toml').replace(/[/.]/g, '\\$&')}:7: amqp trigger .* is inert`,
    ),
  )
  t.match(text, /error filesystem trigger cannot watch this folder/)
  t.match(text, new RegExp(`error SOP not loaded: ${join(sopsDir, 'empty').replace(/[/.]/g, '\\$&')}`))
  const res = await fetch(`${hub.webhookUrl}/ok`, { method: 'POST', body: 'x' })
  t.equal(res.status, 202, "the SOP's working trigger still runs")
})
