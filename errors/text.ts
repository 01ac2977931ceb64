// The one way an unknown thrown value becomes a message: an Error's message, anything else as
// String() gives it. Pure.

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
