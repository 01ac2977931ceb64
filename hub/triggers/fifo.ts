// A first-in first-out queue whose take is O(1). `Array.prototype.shift` moves every element
// left; the router's PUBACK queue holds up to a broker's whole in-flight window (1,000 and more),
// and shifting it once per message was 3.9% of the hub's main thread over a peer burst.
export class Fifo<T> {
  private items: T[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  /** The oldest item, left in place. */
  peek(): T | undefined {
    return this.items[this.head]
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined
    const item = this.items[this.head]
    this.items[this.head++] = undefined as T
    // Drop the taken slots once they are half the array: amortised O(1), and memory bounded.
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    } else if (this.head === this.items.length) {
      this.items.length = 0
      this.head = 0
    }
    return item
  }
}
