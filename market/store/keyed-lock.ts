// Serialises work per key inside this process, so "check then write" on one transaction hash or
// one challenge id is atomic: concurrent requests queue, the first to commit wins and the rest
// see its write. The market is one process per data dir (LevelDB holds an exclusive lock).
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
