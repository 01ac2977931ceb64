// When to give memory back (give-back.ts runs it): a busy spell, then quiet long enough. Pure: the
// CPU share of each window comes in, the decision goes out.

/** A window with at least this share of one core busy is a busy one. */
export const BUSY_SHARE = 0.1

/** Whether a busy spell has been seen and not collected after, and the quiet windows since it. */
export interface GiveBackState {
  armed: boolean
  quiet: number
}

export const NOTHING_TO_GIVE_BACK: GiveBackState = { armed: false, quiet: 0 }

/**
 * The next state after a window whose CPU was `share` of one core, and whether to collect now:
 * after `quietWindows` quiet windows in a row following a busy one.
 */
export function afterWindow(
  state: GiveBackState,
  share: number,
  quietWindows: number,
): { state: GiveBackState; collect: boolean } {
  if (share >= BUSY_SHARE) return { state: { armed: true, quiet: 0 }, collect: false }
  if (!state.armed) return { state, collect: false }
  const quiet = state.quiet + 1
  if (quiet >= quietWindows) return { state: NOTHING_TO_GIVE_BACK, collect: true }
  return { state: { armed: true, quiet }, collect: false }
}
