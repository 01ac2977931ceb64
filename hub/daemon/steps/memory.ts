// Memory given back to the system once a busy spell is over (hub/memory/give-back.ts).
import { STAGE_MS } from '../../engine/store-context.ts'
import { startGiveBack, WINDOW_MS } from '../../memory/give-back.ts'
import { FORGET_AFTER_MS } from '../../triggers/intake.ts'
import type { StartContext } from './context.ts'

/**
 * Quiet long enough for what a burst leaves behind to be done: its once-only marks forgotten
 * FORGET_AFTER_MS after their PUBACK, LevelDB's staged share written STAGE_MS after the last
 * batch, and a window more for those writes themselves.
 */
export const QUIET_MS = FORGET_AFTER_MS + STAGE_MS + WINDOW_MS

export function startMemoryGiveBack({ log, closers }: StartContext): void {
  const giveBack = startGiveBack({ log, quietMs: QUIET_MS })
  closers.add('memory give-back', async () => giveBack.stop())
}
