// Whether this process's hub is refusing new work on purpose for want of disk: the question the
// systemd watchdog asks (hub/service/) before it lets a hub whose store refuses writes be
// restarted. A hub refusing honestly is doing the right thing, and a restart would not free the
// disk. One process runs one hub; tests that start several in one process get the answer for
// any of them.

interface Refuser {
  refusing(): boolean
}

const guards = new Set<Refuser>()

/** True while a running hub's disk guard (guard.ts) refuses new work. */
export function refusingHonestly(): boolean {
  for (const g of guards) if (g.refusing()) return true
  return false
}

/** A guard says it is running (started) or gone (stopped). */
export function registerRefuser(g: Refuser): () => void {
  guards.add(g)
  return () => {
    guards.delete(g)
  }
}
