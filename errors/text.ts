// The one way an unknown thrown value becomes a message (an Error's message, anything else as
// String() gives it), and the one way its code is read. Pure.

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** The code a thrown value carries, if any: Node's errno name, LevelDB's, mqtt.js's reason code. */
export function codeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined
}
