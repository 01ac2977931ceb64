// `[[boards]] flash` (bridge/flash/profile.ts): a profile's name or a table, every refusal naming
// the key, and nothing avrdude would read as an option of its own let through.
import t from 'tap'
import { checkFlashProfile, FLASH_PROFILES } from '../../bridge/flash/profile.ts'

const W = '[[boards]] flash'

t.test('the uno profile is an Uno with optiboot, reset by DTR', async (t) => {
  t.same(FLASH_PROFILES.uno, {
    programmer: 'arduino',
    part: 'm328p',
    baud: 115200,
    reset: { kind: 'dtr' },
    maxImageBytes: 32_256,
  })
  t.same(checkFlashProfile('uno', W), { ok: true, value: FLASH_PROFILES.uno })
})

t.test('a table starts from a named profile and overrides what it names', async (t) => {
  const emulated = checkFlashProfile(
    { profile: 'uno', reset: { kind: 'command', argv: ['kill', '-USR1', '4242'] } },
    W,
  )
  t.same(emulated, {
    ok: true,
    value: { ...FLASH_PROFILES.uno, reset: { kind: 'command', argv: ['kill', '-USR1', '4242'] } },
  })
  const own = checkFlashProfile({ programmer: 'wiring', part: 'm2560', baud: 115200 }, W)
  t.same(own, {
    ok: true,
    value: { programmer: 'wiring', part: 'm2560', baud: 115200, reset: { kind: 'dtr' } },
  })
  t.same(checkFlashProfile({ profile: 'uno', reset: 'dtr', baud: 57600 }, W), {
    ok: true,
    value: { ...FLASH_PROFILES.uno, baud: 57600 },
  })
  const r = checkFlashProfile('uno', W)
  if (r.ok) r.value.baud = 1
  t.equal(FLASH_PROFILES.uno!.baud, 115200, 'a checked profile is a copy')
})

t.test('bad values are refused with the key', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    ['mega', /^\[\[boards\]\] flash: unknown flash profile "mega" \(known: uno\)$/],
    ['toString', /unknown flash profile "toString"/],
    [42, /^\[\[boards\]\] flash: must be a profile name \(uno\) or a table$/],
    [[], /must be a profile name/],
    [null, /must be a profile name/],
    [{ profile: 'nope' }, /^\[\[boards\]\] flash\.profile: unknown flash profile "nope"/],
    [{ profile: 3 }, /^\[\[boards\]\] flash\.profile: must be one of uno$/],
    [{ profile: 'uno', speed: 1 }, /^\[\[boards\]\] flash\.speed: unknown key/],
    [
      { profile: 'uno', programmer: '-Uflash:w:x:i' },
      /^\[\[boards\]\] flash\.programmer: must be an avrdude id/,
    ],
    [{ profile: 'uno', part: 'm328p extra' }, /^\[\[boards\]\] flash\.part: must be an avrdude id/],
    [{ profile: 'uno', part: '' }, /flash\.part: must be an avrdude id/],
    [
      { profile: 'uno', baud: 115200.5 },
      /^\[\[boards\]\] flash\.baud: must be an integer from 300 to 2000000$/,
    ],
    [{ profile: 'uno', baud: '115200' }, /flash\.baud: must be an integer/],
    [{ profile: 'uno', baud: 100 }, /flash\.baud: must be an integer/],
    [{ profile: 'uno', maxImageBytes: 0 }, /flash\.maxImageBytes: must be an integer from 1 to 262144/],
    [{ programmer: 'arduino', part: 'm328p' }, /^\[\[boards\]\] flash\.baud: missing \(or name a profile/],
    [{ profile: 'uno', reset: 'gpio' }, /^\[\[boards\]\] flash\.reset: must be "dtr", \{ kind = "dtr" \} or/],
    [
      { profile: 'uno', reset: { kind: 'pin' } },
      /^\[\[boards\]\] flash\.reset\.kind: must be "dtr" or "command"$/,
    ],
    [{ profile: 'uno', reset: { kind: 'command' } }, /flash\.reset\.argv: must be a list of 1 to 64 strings/],
    [{ profile: 'uno', reset: { kind: 'command', argv: [] } }, /flash\.reset\.argv: must be a list/],
    [
      { profile: 'uno', reset: { kind: 'command', argv: 'kill -USR1 1' } },
      /flash\.reset\.argv: must be a list/,
    ],
    [
      { profile: 'uno', reset: { kind: 'command', argv: [''] } },
      /^\[\[boards\]\] flash\.reset\.argv\[0\]: must be a string/,
    ],
    [
      { profile: 'uno', reset: { kind: 'command', argv: ['kill', 9] } },
      /flash\.reset\.argv\[1\]: must be a string/,
    ],
    [{ profile: 'uno', reset: { kind: 'command', argv: ['a\0b'] } }, /flash\.reset\.argv\[0\]/],
    [
      { profile: 'uno', reset: { kind: 'dtr', argv: ['x'] } },
      /flash\.reset\.argv: only for kind = "command"/,
    ],
    [{ profile: 'uno', reset: { kind: 'command', argv: ['x'], pin: 3 } }, /flash\.reset\.pin: unknown key/],
  ]
  for (const [raw, re] of cases) {
    const r = checkFlashProfile(raw, W)
    t.equal(r.ok, false, JSON.stringify(raw))
    if (!r.ok) {
      t.match(r.error, re, JSON.stringify(raw))
      t.equal(r.code, 'BAD_CONFIG', JSON.stringify(raw))
    }
  }
})
