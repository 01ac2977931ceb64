// The hook for a hub that refuses new work on purpose (the disk below its reserve): such a hub
// is doing the right thing, and a restart would not free the disk, so the watchdog keeps pinging
// it (health.ts) while its store refuses writes. Nothing refuses work that way yet: when the disk
// reserve lands, this returns its state, and the STATUS= line says so.
export function refusingHonestly(): boolean {
  return false
}
