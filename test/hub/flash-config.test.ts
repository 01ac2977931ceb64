// hub.toml's board flash settings: `[[boards]] flash` (a profile's name or a table, checked by the
// bridge's flash profiles, named in hub.toml's spelling) and `[flash]`; printed back by
// `svc hub config` so that the printed file reads back to the same settings.
import { stringify } from 'smol-toml'
import t from 'tap'
import { parseConfig, resolveConfig } from '../../hub/daemon/config.ts'
import { configToToml } from '../../hub/daemon/config-toml.ts'

const board = (extra: Record<string, unknown>) => ({
  boards: [{ name: 'vend1', port: '/dev/ttyACM0', ...extra }],
})

t.test('defaults: no flash profile, [flash] filled in', async (t) => {
  const r = resolveConfig(board({}), null)
  if (!r.ok) throw new Error(r.error)
  t.equal(r.config.boards[0]!.flash, undefined)
  t.same(r.config.flash, { avrdude: 'avrdude', helloTimeoutMs: 15_000, keepImages: 5 })
})

t.test('a profile by name, and a table in snake_case', async (t) => {
  let r = resolveConfig(board({ flash: 'uno' }), null)
  if (!r.ok) throw new Error(r.error)
  t.same(r.config.boards[0]!.flash, {
    programmer: 'arduino',
    part: 'm328p',
    baud: 115200,
    reset: { kind: 'dtr' },
    maxImageBytes: 32_256,
  })
  r = resolveConfig(
    {
      ...board({
        flash: {
          profile: 'uno',
          reset: { kind: 'command', argv: ['gpioset', 'gpiochip0', '17=0'] },
          max_image_bytes: 30_720,
        },
      }),
      flash: { avrdude: '/usr/local/bin/avrdude', hello_timeout_ms: 20_000, keep_images: 3 },
    },
    null,
  )
  if (!r.ok) throw new Error(r.error)
  t.same(r.config.boards[0]!.flash, {
    programmer: 'arduino',
    part: 'm328p',
    baud: 115200,
    reset: { kind: 'command', argv: ['gpioset', 'gpiochip0', '17=0'] },
    maxImageBytes: 30_720,
  })
  t.same(r.config.flash, { avrdude: '/usr/local/bin/avrdude', helloTimeoutMs: 20_000, keepImages: 3 })
})

t.test('errors name the board and the key as hub.toml spells it', async (t) => {
  const bad = (doc: unknown) => {
    const r = resolveConfig(doc, null)
    return r.ok ? 'accepted' : r.error
  }
  t.equal(
    bad(board({ flash: 'mega' })),
    'hub.toml: boards[0].flash: unknown flash profile "mega" (known: uno)',
  )
  t.equal(
    bad(board({ flash: { profile: 'uno', baud: 7 } })),
    'hub.toml: boards[0].flash.baud: must be an integer from 300 to 2000000',
  )
  t.equal(
    bad(board({ flash: { profile: 'uno', max_image_bytes: 0 } })),
    'hub.toml: boards[0].flash.max_image_bytes: must be an integer from 1 to 262144',
  )
  t.equal(
    bad(board({ flash: { profile: 'uno', maxImageBytes: 100 } })),
    'hub.toml: boards[0].flash.maxImageBytes: unknown field (hub.toml keys are snake_case: max_image_bytes)',
  )
  t.match(
    bad(board({ flash: { profile: 'uno', speed: 1 } })),
    /^hub\.toml: boards\[0\]\.flash\.speed: unknown key \(known: .*max_image_bytes\)$/,
  )
  t.equal(
    bad(board({ flash: { programmer: 'arduino' } })),
    'hub.toml: boards[0].flash.part: missing (or name a profile to start from: profile = "uno")',
  )
  t.match(
    bad(board({ flash: { profile: 'uno', reset: { kind: 'command', argv: [] } } })),
    /boards\[0\]\.flash\.reset\.argv: must be a list/,
  )
  t.equal(
    bad(
      board({
        flash: 'uno',
        kind: 'firmata',
        profile: { signals: [{ signal: 'door', type: 'digital', pin: 2 }] },
      }),
    ),
    "hub.toml: boards[0].flash: a Firmata board's firmware is not flashed by the hub (flash StandardFirmata with the hub stopped)",
  )
  t.equal(
    bad(board({ flash: 'uno', simulate: true })),
    'hub.toml: boards[0].flash: a simulated board has no bootloader to flash',
  )
  t.match(bad({ flash: { hello_timeout_ms: 10 } }), /^hub\.toml: flash\.hello_timeout_ms: /)
  t.equal(
    bad({ flash: { helloTimeoutMs: 10_000 } }),
    'hub.toml: flash.helloTimeoutMs: unknown field (hub.toml keys are snake_case: hello_timeout_ms)',
  )
})

t.test('svc hub config prints the flash settings so that they read back the same', async (t) => {
  const text = `[flash]\nhello_timeout_ms = 9000\n\n[[boards]]\nname = "vend1"\nport = "/dev/ttyACM0"\nflash = { profile = "uno", reset = { kind = "command", argv = ["kill", "-USR1", "42"] } }\n`
  const first = parseConfig(text, null)
  if (!first.ok) throw new Error(first.error)
  const printed = stringify(configToToml(first.config).doc)
  t.match(printed, /max_image_bytes = 32256/)
  t.match(printed, /hello_timeout_ms = 9000/)
  const again = parseConfig(printed, null)
  if (!again.ok) throw new Error(again.error)
  t.same(again.config.boards, first.config.boards)
  t.same(again.config.flash, first.config.flash)
})
