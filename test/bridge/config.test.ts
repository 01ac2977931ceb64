// `[[boards]]` checks: every rejection names the board and the field, and nothing opens.
import t from 'tap'
import { checkBoardConfigs, createBridge, type BoardConfig } from '../../bridge/index.ts'

t.test('bad board configs say which board and which field', async (t) => {
  const ok: BoardConfig = { name: 'vend1', port: '/dev/ttyUSB0' }
  const cases: Array<[unknown, RegExp]> = [
    [[{ ...ok, name: 'a b' }], /^boards\[0\] \(a b\)\.name: must match/],
    [[{ ...ok, name: 'x/y' }], /\.name: must match/],
    [[{ ...ok, name: '' }], /\.name: must match/],
    [[{ ...ok, name: 5 }], /^boards\[0\]\.name: must match/],
    [[ok, { ...ok, port: '/dev/ttyUSB1' }], /^boards\[1\] \(vend1\)\.name: duplicate board name$/],
    [
      [ok, { ...ok, name: 'vend2' }],
      /^boards\[1\] \(vend2\)\.port: \/dev\/ttyUSB0 is already used by another board$/,
    ],
    [[{ ...ok, port: '' }], /\.port: must be a non-empty path/],
    [[{ ...ok, baud: 12345 }], /\.baud: 12345 is not a standard baud rate/],
    [[{ ...ok, lineCap: 8 }], /\.lineCap: must be an integer from 16 to 1048576 \(default 1024\)/],
    [[{ ...ok, lineCap: 1.5 }], /\.lineCap: /],
    [[{ ...ok, heartbeatMs: 10 }], /\.heartbeatMs: must be 0 \(off\) or an integer ≥ 50/],
    [[{ ...ok, kind: 'usb' }], /\.kind: must be "serial" or "firmata"/],
    [[{ ...ok, simulate: 'yes' }], /\.simulate: must be true\/false or simulator options/],
    [[{ ...ok, simulate: { rate: -1 } }], /\.simulate\.rate: must be 0 to 100000 events\/s/],
    [[null], /^boards\[0\]: must be a table/],
    ['nope', /^boards: must be an array/],
  ]
  for (const [boards, re] of cases) {
    const r = checkBoardConfigs(boards as BoardConfig[])
    t.equal(r.ok, false, JSON.stringify(boards))
    if (!r.ok) {
      t.match(r.error, re)
      t.equal(r.code, 'BAD_CONFIG')
    }
  }
  t.same(
    checkBoardConfigs([
      ok,
      {
        name: 'vend2',
        port: '/dev/ttyUSB1',
        baud: 9600,
        lineCap: 256,
        heartbeatMs: 0,
        simulate: { rate: 5 },
      },
    ]),
    { ok: true },
  )
  t.throws(
    () => createBridge({ boards: [{ ...ok, baud: 7 }], publish: async () => undefined }),
    new TypeError('boards[0] (vend1).baud: 7 is not a standard baud rate'),
  )
})

t.test('a bridge with no boards starts and closes', async (t) => {
  const b = createBridge({ boards: [], publish: async () => undefined })
  await b.start()
  t.same(b.stats(), { boards: {}, queue: { pending: 0, inflight: 0, delivered: 0, dropped: 0, retries: 0 } })
  t.same(await b.send('x', 'ping', {}), {
    ok: false,
    error: 'unknown board "x" (configured: none)',
    code: 'unknown_board',
  })
  await b.close()
  await b.close() // twice is harmless
})
