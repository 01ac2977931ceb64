// Whether this process's hub is refusing new work on purpose for want of disk: the question the
// systemd watchdog asks (hub/service/) before it lets a hub whose store refuses writes be
// restarted. A hub refusing honestly is doing the right thing, and a restart would not free the
// disk. One process runs one hub; tests that start several in one process get the answer for
// any of them.

interface Refuser {
  refusing(): boolean
  /** Stores whose writes failed and that are not open again yet. */
  failed(): readonly { store: string; error: string }[]
}

const guards = new Set<Refuser>()

/** True while a running hub's disk guard (guard.ts) refuses new work. */
export function refusingHonestly(): boolean {
  for (const g of guards) if (g.refusing()) return true
  return false
}

/**
 * Stores that refuse writes while no hub here refuses for want of disk: a failure a restart may
 * cure (the watchdog withholds its ping). While the disk is short they wait for room instead.
 */
export function storesRefusingWrites(): { store: string; error: string }[] {
  if (refusingHonestly()) return []
  return [...guards].flatMap((g) => [...g.failed()])
}

/** A guard says it is running (started) or gone (stopped). */
export function registerRefuser(g: Refuser): () => void {
  guards.add(g)
  return () => {
    guards.delete(g)
  }
}
