import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { SortedIds } from './sorted-ids';

describe('SortedIds', () => {
  it('lists its members in key order after a key, through adds, deletes and re-adds between listings', () => {
    const ids = new SortedIds();
    for (const id of ['m', 'c', 'x', 'a']) ids.add(id);
    expect([...ids.after(undefined)]).toEqual(['a', 'c', 'm', 'x']);
    ids.delete('c');
    ids.add('b');
    ids.add('b');
    expect([...ids.after('a')]).toEqual(['b', 'm', 'x']);
    ids.delete('m');
    ids.add('m'); // deleted, then back: listed once
    ids.add('d');
    ids.delete('d'); // added, then gone before any listing
    expect([...ids.after(undefined)]).toEqual(['a', 'b', 'm', 'x']);
    expect([...ids.after('m')]).toEqual(['x']);
    expect([...ids.after('zz')]).toEqual([]);
    expect(ids.size).toBe(4);
  });

  it('skips ids deleted while a listing reads it (a scan that purges what it lists)', () => {
    const ids = new SortedIds();
    for (let i = 0; i < 10; i++) ids.add(`w${i}`);
    const seen: string[] = [];
    for (const id of ids.after(undefined)) {
      seen.push(id);
      ids.delete(id);
      if (id === 'w2') ids.delete('w3');
    }
    expect(seen).toEqual(['w0', 'w1', 'w2', 'w4', 'w5', 'w6', 'w7', 'w8', 'w9']);
    expect(ids.size).toBe(0);
    expect([...ids.after(undefined)]).toEqual([]);
  });

  it('agrees with a sorted Set under any sequence of operations and listings', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), id: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ kind: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ kind: fc.constant('list' as const), id: fc.integer({ min: -1, max: 30 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const ids = new SortedIds();
        const model = new Set<string>();
        const key = (n: number) => `k${String(n).padStart(2, '0')}`;
        for (const { kind, id } of ops) {
          if (kind === 'add') {
            ids.add(key(id));
            model.add(key(id));
          } else if (kind === 'delete') {
            ids.delete(key(id));
            model.delete(key(id));
          } else {
            const after = id < 0 ? undefined : key(id);
            const expected = [...model].sort().filter((k) => after === undefined || k > after);
            expect([...ids.after(after)]).toEqual(expected);
          }
          expect(ids.size).toBe(model.size);
        }
      }),
    );
  });
});
