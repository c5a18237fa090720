import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { fnv1a32, indexPartitionOf, isShardCount, shardOf } from './shard-of';

/** id → [fnv1a32, shardOf for n = 1, 2, 4, 8, 16]; computed independently of this code. */
const GOLDEN: ReadonlyArray<[string, number, readonly number[]]> = [
  ['', 0x811c9dc5, [0, 1, 1, 5, 5]],
  ['a', 0xe40c292c, [0, 0, 0, 4, 12]],
  ['0', 0x350ca8af, [0, 1, 3, 7, 15]],
  ['abc', 0x1a47e90b, [0, 1, 3, 3, 11]],
  ['wf-1', 0xd88c4be2, [0, 0, 2, 2, 2]],
  ['wf-2', 0xd78c4a4f, [0, 1, 3, 7, 15]],
  ['wf-42', 0x46d3ef81, [0, 1, 1, 1, 1]],
  ['nightly-2026-01-01', 0x10c4ce03, [0, 1, 3, 3, 3]],
  ['A.b_c-9', 0xa08d5d10, [0, 0, 0, 0, 0]],
  ['x'.repeat(128), 0x2f5e97c5, [0, 1, 1, 5, 5]],
  // Not workflow ids, but the hash is defined on any string (UTF-16 code units).
  ['träin', 0xeacb1a7e, [0, 0, 2, 6, 14]],
  ['日本語', 0x5406374e, [0, 0, 2, 6, 14]],
  ['😀', 0xcb31c4b8, [0, 0, 0, 0, 8]],
];

describe('shardOf', () => {
  it.each(GOLDEN)('golden vector %j', (id, hash, shards) => {
    expect(fnv1a32(id)).toBe(hash);
    expect([1, 2, 4, 8, 16].map((n) => shardOf(id, n))).toEqual(shards);
  });

  it('refuses any other shard count, naming the allowed ones', () => {
    for (const bad of [0, 3, 32, -1, 1.5, Number.NaN, 6]) {
      expect(() => shardOf('wf-1', bad)).toThrow(/a shard count must be one of 1, 2, 4, 8, 16, got /);
    }
    expect(isShardCount(16)).toBe(true);
    expect(isShardCount('4')).toBe(false);
  });

  it('is the index partition mod n, so a shard is a set of whole index partitions', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 140 }), fc.constantFrom(1, 2, 4, 8, 16), (id, n) => {
        const k = shardOf(id, n);
        expect(k).toBe(indexPartitionOf(id) % n);
        expect(k).toBeGreaterThanOrEqual(0);
        expect(k).toBeLessThan(n);
        // Growing n by a multiple splits a shard: the old shard is the new one mod the old count.
        if (n > 1) expect(shardOf(id, n) % (n / 2)).toBe(shardOf(id, n / 2));
      }),
    );
  });
});
