// No HTTP status and no branch is chosen by matching our own error text: a refusal carries a
// code (errors/codes.ts) or a flag, and the status comes from the code's table, so a message can
// be reworded without changing what anyone does with it. Matching a message is allowed only where
// the text is another program's (a library, a broker, a chain node, an emulator), each listed with
// why. `npx tap test/architecture/error-text.test.ts` reads the source; the README lists the rules.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { root, sourceFiles } from './source-files.ts'

const files = sourceFiles

// A name that holds a message: error, reason, message, msg, err (and `x.error`, `e.message`…).
const TEXT = String.raw`\b(?:error|err|reason|message|msg|shortMessage|details)\b`
const PATTERNS: { what: string; re: RegExp }[] = [
  {
    what: 'a string method on a message',
    re: new RegExp(`${TEXT}\\)?\\??\\.(?:startsWith|endsWith|includes|match|search|indexOf)\\(`),
  },
  { what: 'a regular expression tested on a message', re: new RegExp(`/[a-z]*\\.test\\([^)]*${TEXT}`) },
  // A non-empty literal: `error !== ''` asks whether there is a message, not what it says.
  { what: 'a message compared with a literal', re: new RegExp(`${TEXT}\\s*[!=]==?\\s*(['"\`])(?!\\1)`) },
]

const TYPEOF = /typeof\s+[\w$.?[\]]+\s*[!=]==?\s*'[a-z]+'/g

/** file → why its match is of text we do not write. Each entry must still match (no stale ones). */
const ALLOWED: Record<string, string> = {
  'hub/broker/broker.ts': 'Aedes reports a client that hung up as a clientError "connection closed"',
  'hub/attest/sync.ts':
    "a chain node's answer to a resent transaction (already known, nonce too low), via viem",
  'hub/console/pages/runs.ts':
    "a run log entry's text, groups the lines of one step on the runs page (display only, no status)",
  'chain/call-route.ts': "viem's out-of-gas message from the node, and the node's bare revert data",
  'chain/official-errors.ts': "viem fills a revert's reason with the node's text when the revert had none",
  'chain/reads.ts': "the registry contract's revert string for an unknown request hash (on-chain data)",
  'market/chain/batch-reader-codec.ts':
    "the registry contract's revert string, decoded from the batch reader",
  'bridge/firmata/link.ts': 'a type guard: whether a thrown value has a string message, not what it says',
  'boards/firmware/simavr/emulated-uno.ts': "simavr's output lines, the emulator's protocol",
}

function offences(raw: string): string[] {
  if (/^\s*(\/\/|\*)/.test(raw)) return []
  // A type test (`typeof x.error === 'string'`) asks what a value is, not what it says.
  const line = raw.replace(TYPEOF, '')
  return PATTERNS.filter((p) => p.re.test(line)).map((p) => p.what)
}

function matches(file: string): string[] {
  let text: string
  try {
    text = readFileSync(join(root, file), 'utf8')
  } catch {
    return [] // listed by git but deleted in the working tree
  }
  const out: string[] = []
  text.split('\n').forEach((line, i) => {
    for (const what of offences(line)) out.push(`${file}:${i + 1}: ${what}: ${line.trim()}`)
  })
  return out
}

t.test('the patterns see what they forbid', async (t) => {
  // Guards against patterns that match nothing and so pass every file.
  const seen = (line: string) => offences(line).length > 0
  t.ok(seen("reply.code(r.error.startsWith('no run') ? 404 : 409)"))
  t.ok(seen("if (d.reason.startsWith('no SOP named')) return"))
  t.ok(seen('const status = /^no run with id/.test(result.error)'))
  t.ok(seen("if (err.message === 'not found') return 404"))
  t.notOk(seen("if (r.code === 'RUN_NOT_FOUND') return"))
  t.notOk(seen("if (typeof r.error === 'string' && r.error !== '') return"))
})

t.test('no status or branch is chosen by matching our own error text', async (t) => {
  const found = files.filter((f) => !(f in ALLOWED)).flatMap(matches)
  t.same(found, [], 'carry a code (errors/codes.ts) or a flag in the result instead')
})

t.test('every allowed file still matches (an entry whose match is gone is removed)', async (t) => {
  const stale = Object.keys(ALLOWED).filter((f) => matches(f).length === 0)
  t.same(stale, [])
})
