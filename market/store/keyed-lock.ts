// Serialises work per key inside this process: concurrent requests with one transaction hash or
// one challenge id queue, and the first to commit wins. The LevelDB engine uses it as its
// guarantee (one process per data dir: LevelDB holds an exclusive lock); the routes use it in
// front of either engine only to spare the database work, since on PostgreSQL the guarantee is
// the database's own (store.ts).
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>()

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve()
    const next = prev.then(fn, fn)
    const tail = next.catch(() => undefined)
    this.tails.set(key, tail)
    try {
      return await next
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }
}
