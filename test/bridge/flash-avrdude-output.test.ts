// Reading avrdude 7.1's output (bridge/flash/avrdude-output.ts): progress bars become percentages
// of the right phase however the output is cut into pieces, the phase follows the session, and a
// failure is summed up by the line that says why. The transcripts are avrdude 7.1's own (`-v`,
// stderr a pipe), taken from sessions with the emulated Uno and cut to the lines that matter.
import fc from 'fast-check'
import t from 'tap'
import { AvrdudeOutput, type FlashProgress } from '../../bridge/flash/avrdude-output.ts'

const HEAD = `avrdude: Version 7.1
         System wide configuration file is /etc/avrdude.conf
avrdude: setting number of retry attempts to 1
         Using Port                    : /tmp/uno
         Using Programmer              : arduino
         Overriding Baud Rate          : 115200
avrdude ser_set_dtr_rts() OS error: ioctl("TIOCMGET"): Inappropriate ioctl for device
avrdude ser_set_dtr_rts() OS error: ioctl("TIOCMGET"): Inappropriate ioctl for device
         AVR Part                      : ATmega328P
avrdude: AVR device initialized and ready to accept instructions
avrdude: device signature = 0x1e950f (probably m328p)
`
const bar = (name: string, n = 50, end = ' | 100% 0.48s') => `\n${name} | ${'#'.repeat(n)}${end}\n\n`
const TAIL =
  'avrdude ser_set_dtr_rts() OS error: ioctl("TIOCMGET"): Inappropriate ioctl for device\n\navrdude done.  Thank you.\n\n'

const READ_THEN_WRITE =
  HEAD +
  'avrdude: reading flash memory ...\n' +
  bar('Reading') +
  'avrdude: writing output file /tmp/old.hex\n' +
  'avrdude: reading input file /tmp/new.hex for flash\n' +
  '         with 6858 bytes in 1 section within [0, 0x1ac9]\n' +
  'avrdude: writing 6858 bytes flash ...\n' +
  bar('Writing') +
  'avrdude: 6858 bytes of flash written\n' +
  'avrdude: verifying flash memory against /tmp/new.hex\n' +
  bar('Reading') +
  'avrdude: 6858 bytes of flash verified\n' +
  TAIL

function feedAll(text: string, cuts: number[]): { out: AvrdudeOutput; events: FlashProgress[] } {
  const out = new AvrdudeOutput()
  const events: FlashProgress[] = []
  let at = 0
  for (const c of [...cuts.filter((c) => c > 0 && c < text.length)].sort((a, b) => a - b)) {
    events.push(...out.feed(text.slice(at, c)))
    at = c
  }
  events.push(...out.feed(text.slice(at)))
  return { out, events }
}

t.test('a read then a write: three bars, each in its phase, each once to 100%', async (t) => {
  const { out, events } = feedAll(READ_THEN_WRITE, [])
  const phases = [...new Set(events.map((e) => e.phase))]
  t.same(phases, ['reading', 'writing', 'verifying'])
  for (const p of phases) {
    const mine = events.filter((e) => e.phase === p).map((e) => e.percent)
    t.equal(mine.at(-1), 100, `${p} ends at 100%`)
    t.ok(
      mine.every((v, i) => i === 0 || v > mine[i - 1]!),
      `${p} only goes up`,
    )
  }
  t.equal(out.written, 6858)
  t.equal(out.phase, 'verifying')
})

t.test('however the output is cut, the same progress comes out', async (t) => {
  const whole = feedAll(READ_THEN_WRITE, []).events
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: READ_THEN_WRITE.length }), { maxLength: 40 }), (cuts) => {
      const { events } = feedAll(READ_THEN_WRITE, cuts)
      // Pieces can show a bar's hashes in more steps, never other values or another order.
      const last = (p: string) => events.filter((e) => e.phase === p).at(-1)?.percent
      return (
        JSON.stringify([...new Set(events.map((e) => e.phase))]) ===
          JSON.stringify([...new Set(whole.map((e) => e.phase))]) &&
        ['reading', 'writing', 'verifying'].every((p) => last(p) === 100) &&
        events.every((e) => e.percent % 2 === 0 && e.percent >= 0 && e.percent <= 100)
      )
    }),
  )
  // One hash at a time, as avrdude writes them: every step of 2%.
  const cuts = [...READ_THEN_WRITE].map((_, i) => i)
  const { events } = feedAll(READ_THEN_WRITE, cuts)
  t.same(
    events.filter((e) => e.phase === 'writing').map((e) => e.percent),
    Array.from({ length: 51 }, (_, i) => i * 2),
  )
})

t.test('a bar avrdude gives up on stops where it was', async (t) => {
  const text = `${HEAD}avrdude: writing 6858 bytes flash ...\n\nWriting | ##########----------`
  const { out, events } = feedAll(text, [])
  t.equal(events.at(-1)?.percent, 20)
  t.equal(out.phase, 'writing')
})

t.test('no bootloader answering: still connecting, and why', async (t) => {
  const text =
    HEAD.split('         AVR Part')[0] +
    'avrdude stk500_recv() error: programmer is not responding\n' +
    'avrdude stk500_getsync() warning: attempt 1 of 1: not in sync: resp=0x00\n' +
    'avrdude main() error: unable to open programmer arduino on port /tmp/uno\n' +
    TAIL
  const { out } = feedAll(text, [])
  t.equal(out.phase, 'connecting')
  t.equal(out.reason(), 'stk500_recv() error: programmer is not responding')
  t.notMatch(out.lastLines(), /TIOCMGET/, "a pty's failed DTR pulse is not quoted")
  t.match(out.lastLines(3), /not in sync[\s\S]*unable to open programmer[\s\S]*Thank you/)
})

t.test('a sync that got the wrong answer: the warning that says so, not the summary', async (t) => {
  const text =
    HEAD.split('         AVR Part')[0] +
    'avrdude stk500_getsync() warning: attempt 1 of 1: not in sync: resp=0x7b\n' +
    'avrdude main() error: unable to open programmer arduino on port /tmp/uno\n' +
    TAIL
  const { out } = feedAll(text, [])
  t.equal(out.phase, 'connecting')
  t.equal(out.reason(), 'stk500_getsync() warning: attempt 1 of 1: not in sync: resp=0x7b')
})

t.test('a verification mismatch names the first differing byte', async (t) => {
  const text =
    HEAD +
    'avrdude: verifying flash memory against /tmp/new.hex\n' +
    bar('Reading') +
    'avrdude avr_verify() warning: verification mismatch\n' +
    '        device 0x39 != input 0x31 at addr 0x009a (error)\n' +
    '        device 0x39 != input 0x32 at addr 0x0314 (error)\n' +
    'avrdude do_op() error: verification mismatch\n' +
    TAIL
  const { out } = feedAll(text, [])
  t.equal(out.phase, 'verifying')
  t.equal(out.reason(), 'do_op() error: verification mismatch (device 0x39 != input 0x31 at addr 0x009a)')
})

t.test('a port that is not there', async (t) => {
  const { out } = feedAll(
    'avrdude ser_open() OS error: cannot open port /dev/ttyACM9: No such file or directory\n' +
      'avrdude main() error: unable to open programmer arduino on port /dev/ttyACM9\n',
    [],
  )
  t.equal(out.reason(), 'ser_open() OS error: cannot open port /dev/ttyACM9: No such file or directory')
  t.equal(new AvrdudeOutput().reason(), 'avrdude said nothing')
})
