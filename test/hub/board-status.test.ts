// `svc board status`'s table (cli/board-hub.ts formatStatus): the firmware a board's hello
// named, split into name and version, its line protocol, flagged when the hub does not speak it;
// a board before its hello, a Firmata board and a firmware string of another shape.
import t from 'tap'
import { SUPPORTED_PROTOCOLS } from '../../bridge/codec/protocol.ts'
import type { BoardStats } from '../../bridge/types.ts'
import { formatStatus } from '../../cli/board-hub.ts'

const base: BoardStats = {
  kind: 'serial',
  state: 'online',
  hello: 'vend1',
  fw: 'svc-companion/0.2.0',
  version: '0.2.0',
  proto: 1,
  hellos: 1,
  lines: 7,
  events: 5,
  published: 5,
  oversized: 0,
  garbage: 0,
  unmatched: 0,
  dropped: 0,
  reconnects: 0,
  commands: 1,
  timeouts: 0,
  last_event_at: null,
}

t.test('firmware name, version and protocol columns', async (t) => {
  const out = formatStatus({
    vend1: base,
    vend2: { ...base, fw: 'svc-companion/0.3.0', version: '0.3.0', proto: 2 },
    vend3: {
      ...base,
      state: 'silent',
      hello: undefined,
      fw: undefined,
      version: undefined,
      proto: undefined,
    },
    uno1: {
      ...base,
      kind: 'firmata',
      hello: undefined,
      fw: 'StandardFirmata 2.5',
      version: undefined,
      proto: undefined,
    },
    vend4: { ...base, fw: 'my sketch', version: undefined, proto: 1 },
  })
  const rows = out.split('\n').map((r) => r.split(/ {2,}/))
  t.same(rows[0]!.slice(0, 6), ['BOARD', 'STATE', 'KIND', 'FIRMWARE', 'VERSION', 'PROTO'])
  const cols = (name: string) => rows.find((r) => r[0] === name)!.slice(3, 6)
  t.same(cols('vend1'), ['svc-companion', '0.2.0', '1'])
  t.same(cols('vend2'), ['svc-companion', '0.3.0', `2 (hub speaks ${SUPPORTED_PROTOCOLS.join(',')})`])
  t.same(cols('vend3'), ['-', '-', '-'], 'no hello yet')
  t.same(
    cols('uno1'),
    ['StandardFirmata 2.5', '-', '-'],
    'Firmata: its own firmware string, no line protocol',
  )
  t.same(cols('vend4'), ['my sketch', '-', '1'], 'a firmware string that is not name/version is shown whole')
  t.same(
    new Set(rows.map((r) => r.length)),
    new Set([rows[0]!.length]),
    'every row has every column (aligned by two spaces or more)',
  )
})
