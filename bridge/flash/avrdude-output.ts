// What avrdude (7.1, `-v`, stderr not a terminal) says while it works, read as it comes: the
// phase it is in and its progress bars as percentages, and the lines to quote when it fails.
// Pure: text in, events out; avrdude.ts feeds it the child's stderr.
//
// Without a terminal avrdude draws a bar as `Reading | ` or `Writing | `, then one `#` per 2% as
// it goes (`-` instead when it gives up), then ` | 100% 0.45s`. A write's verification reads the
// flash back with a `Reading` bar after `verifying flash memory against …`.

/** Where a session is, for progress and for an error to name. */
export type FlashPhase = 'checking' | 'reset' | 'connecting' | 'reading' | 'writing' | 'verifying'

export interface FlashProgress {
  phase: 'reading' | 'writing' | 'verifying'
  percent: number
}

const BAR = /^(Reading|Writing) \| ([#-]*)/
const KEEP_LINES = 200
// On a pseudo-terminal (an emulated board) avrdude's DTR/RTS pulse fails and says so at every
// open; that is expected there and says nothing about why a session failed.
const DTR_NOISE = /ioctl\("TIOCM(GET|SET)"\)/

export class AvrdudeOutput {
  phase: FlashPhase = 'connecting'
  private partial = ''
  private bar: FlashProgress['phase'] | undefined
  private barPercent = -1
  private readonly kept: string[] = []
  /** Bytes avrdude said it wrote (`N bytes of flash written`), over every write in the session. */
  written = 0

  /** Takes the next piece of output; returns the progress it showed, in order. */
  feed(chunk: string): FlashProgress[] {
    const events: FlashProgress[] = []
    const parts = (this.partial + chunk).split('\n')
    this.partial = parts.pop() ?? ''
    for (const raw of parts) {
      const line = raw.replace(/\r$/, '')
      this.progress(line, events)
      this.line(line)
    }
    this.progress(this.partial, events)
    return events
  }

  /** The last `n` lines (the DTR noise of a pseudo-terminal left out), for an error's context. */
  lastLines(n = 20): string {
    const all = [...this.kept, this.partial].filter((l) => l.trim() !== '' && !DTR_NOISE.test(l))
    return all.slice(-n).join('\n')
  }

  /**
   * The line that says what went wrong, without avrdude's own name in front: the first one it
   * marked as an error, unless that is only its summary (`unable to open programmer …`, after a
   * sync that failed), then its last warning (`not in sync: resp=0x7b`), then its last line. A
   * verification mismatch gets its first differing byte.
   */
  reason(): string {
    const lines = [...this.kept, this.partial]
      .map((l) => l.trim())
      .filter((l) => l !== '' && !DTR_NOISE.test(l))
    const errors = lines.filter((l) => /\berror: |ERROR: /.test(l))
    const pick =
      errors.find((l) => !/unable to open programmer/.test(l)) ??
      lines.findLast((l) => /\bwarning\b/.test(l)) ??
      errors[0] ??
      lines.at(-1)
    if (!pick) return 'avrdude said nothing'
    const said = pick.replace(/^avrdude:? /, '')
    const first = /verification mismatch/.test(said)
      ? lines.find((l) => /^device 0x[0-9a-f]+ != input/.test(l))
      : undefined
    return first ? `${said} (${first.replace(/ \(error\)$/, '')})` : said
  }

  private progress(line: string, events: FlashProgress[]): void {
    const m = BAR.exec(line)
    if (!m) return
    if (this.bar === undefined) {
      this.bar = m[1] === 'Writing' ? 'writing' : this.phase === 'verifying' ? 'verifying' : 'reading'
      this.barPercent = -1
    }
    const hashes = m[2]!.replace(/-/g, '').length
    const percent = / \| 100% /.test(line) && !m[2]!.includes('-') ? 100 : Math.min(100, hashes * 2)
    if (percent !== this.barPercent) {
      this.barPercent = percent
      events.push({ phase: this.bar, percent })
    }
  }

  private line(line: string): void {
    if (BAR.test(line)) this.bar = undefined
    // Until the first operation starts, avrdude is still talking its way in (sync, signature).
    if (/reading flash memory/.test(line)) this.phase = 'reading'
    if (/reading input file|writing \d+ bytes? flash/.test(line)) this.phase = 'writing'
    if (/verifying flash memory against/.test(line)) this.phase = 'verifying'
    const w = /(\d+) bytes? of flash written/.exec(line)
    if (w) this.written += Number(w[1])
    this.kept.push(line)
    if (this.kept.length > KEEP_LINES) this.kept.shift()
  }
}
