/** A binary min-heap: O(log n) push and pop, O(1) peek. */
export class MinHeap<T> {
  private readonly items: T[] = [];

  /** `before(a, b)`: true when `a` comes out first. */
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  /** Keeps only the items `keep` accepts (O(n): rebuilds the heap). */
  retain(keep: (item: T) => boolean): void {
    const kept = this.items.filter(keep);
    this.items.length = 0;
    for (const item of kept) this.push(item);
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let first = i;
        if (l < items.length && this.before(items[l]!, items[first]!)) first = l;
        if (r < items.length && this.before(items[r]!, items[first]!)) first = r;
        if (first === i) break;
        [items[i], items[first]] = [items[first]!, items[i]!];
        i = first;
      }
    }
    return top;
  }
}

/** A first-in first-out queue with O(1) amortised push and shift (no `Array.shift` copying). */
export class Fifo<T> {
  private items: Array<T | undefined> = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head >= 1_024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** The items from the front, oldest first (for peeking). */
  *values(): IterableIterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i] as T;
  }
}
