// The engine store's heartbeat for the watchdog: each check starts one synced write through the
// engine's group committer (the path every run record takes), and the next check reads whether it
// landed. One write in flight at a time: a write that never lands reads as `pending`, longer each
// check, instead of piling up more behind it.
import type { StoreState } from './health.ts'
import { errorText } from '../../errors/text.ts'

export class StoreProbe {
  private since: number | null = null
  private last: StoreState = { kind: 'ok' }

  constructor(
    private readonly heartbeat: () => Promise<void>,
    private readonly now: () => number,
  ) {}

  /** Starts a heartbeat, unless the last one is still in flight. */
  begin(): void {
    if (this.since !== null) return
    const since = this.now()
    this.since = since
    this.heartbeat().then(
      () => {
        this.since = null
        this.last = { kind: 'ok' }
      },
      (err: unknown) => {
        this.since = null
        this.last = { kind: 'failed', error: errorText(err) }
      },
    )
  }

  state(): StoreState {
    return this.since !== null ? { kind: 'pending', forMs: this.now() - this.since } : this.last
  }
}
