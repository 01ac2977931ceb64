// `svc sop run <name>`: a dry run in this process, tools replaced by recorders,
// over SOP fixtures loaded by the real loader.
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { svcCli } from '../helpers/cli.ts'

const fixtures = fileURLToPath(new URL('./fixtures/sops', import.meta.url))

const cli = svcCli({ ...process.env, SVC_SOPS_DIR: fixtures })
const svc = (...argv: string[]) => cli('sop', 'run', ...argv)

t.test('runs to the first gate, printing each resolved call; --approve-all goes through', async (t) => {
  const a = await svc('restock', '--payload', '{"slot":"B2","count":3}')
  t.equal(a.code, 1)
  t.match(a.out, /\[dry run\] step 1 call 0: inventory_read \{"slot":"B2"\}/)
  t.match(
    a.out,
    /stopped at step 2: waiting_approval \(requires_confirmation: asked in every mode\); prompt: Refill B2\?; pass --approve-all/,
  )
  const b = await svc('restock', '--payload', '{"slot":"B2","count":3}', '--approve-all')
  t.equal(b.code, 0, b.err)
  t.match(b.out, /\[dry run\] step 2 call 0: inventory_write \{"slot":"B2","add":3\}/)
  t.match(b.out, /completed; output: \{"slot":"B2","add":3\}/)
  const j = await svc('restock', '--payload', '{"slot":"B2","count":3}', '--approve-all', '--json')
  const parsed = JSON.parse(j.out)
  t.equal(parsed.run.state, 'completed')
  t.same(
    parsed.calls.map((c: { tool: string }) => c.tool),
    ['inventory_read', 'inventory_write'],
  )
})

t.test('bad input says what was wrong', async (t) => {
  t.match(await svc('nope'), { code: 1, err: /no SOP named "nope" in .*fixtures\/sops/ })
  t.match(await svc('restock', '--payload', '{bad'), { code: 2, err: /--payload is not JSON/ })
  t.match(await svc('restock', '--decide', 'x'), { code: 2, err: /--decide takes STEP=yes\|no/ })
  t.match(await svc(), { code: 2, err: /exactly one SOP name/ })
  t.match(await svc('restock', '--agent-url', 'http://127.0.0.1:9'), { code: 2, err: /go together/ })
})
