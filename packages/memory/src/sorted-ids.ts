import { firstAfter } from './paging';

/**
 * A set of ids that can also be read in key order, for paged listings. `add` and `delete` cost
 * O(1): the order is made when a listing asks for it (the ids added since the last listing are
 * sorted and merged in), and deleted ids stay in it until then, skipped by {@link after} — so a
 * save that moves a workflow from one group to another never pays for the order, and a scan that
 * deletes what it lists (a purge) does not re-sort between pages.
 */
export class SortedIds {
  private readonly members = new Set<string>();
  /** The members in key order as of the last listing, and ids deleted since (never an id twice). */
  private order: string[] = [];
  /** Ids added since `order` was made (may repeat, or have been deleted again). */
  private added: string[] = [];
  /** Entries of `order` that are no longer members. */
  private stale = 0;

  get size(): number {
    return this.members.size;
  }

  has(id: string): boolean {
    return this.members.has(id);
  }

  add(id: string): void {
    if (this.members.has(id)) return;
    this.members.add(id);
    this.added.push(id);
  }

  delete(id: string): void {
    if (this.members.delete(id)) this.stale++;
  }

  values(): IterableIterator<string> {
    return this.members.values();
  }

  /** The members in key order after `after` (from the first one without it), read lazily. */
  *after(after: string | undefined): Generator<string, void, undefined> {
    const order = this.sorted();
    for (let i = after === undefined ? 0 : firstAfter(order, after, (id) => id); i < order.length; i++) {
      const id = order[i]!;
      if (this.members.has(id)) yield id;
    }
  }

  /** `order` brought up to date: the ids added merged in; deleted ones dropped once they are many. */
  private sorted(): readonly string[] {
    if (this.added.length === 0 && this.stale <= this.order.length / 2) return this.order;
    if (this.added.length > this.members.size / 4) {
      this.order = [...this.members].sort();
    } else {
      const added = this.added.sort();
      const merged: string[] = [];
      let i = 0;
      let j = 0;
      while (i < this.order.length || j < added.length) {
        const a = this.order[i];
        const b = added[j];
        const next = b === undefined || (a !== undefined && a <= b) ? (i++, a!) : (j++, b);
        if (this.members.has(next) && merged[merged.length - 1] !== next) merged.push(next);
      }
      this.order = merged;
    }
    this.added = [];
    this.stale = 0;
    return this.order;
  }
}
