import { describe, expect, it } from '@jest/globals';
import type { OwnershipView, ShardCount } from '@jobq/ports';
import { planShards, shardShares } from './shard-plan';

const NOW = new Date('2026-01-01T00:00:00Z');

/** A view: `owners[k]` is shard k's holder (null: free); `expired` lists shards whose lease ran out (owner kept). */
function view(owners: readonly (string | null)[], members: readonly string[], expired: readonly number[] = []): OwnershipView {
  return {
    manifest: { version: 1, shards: owners.length as ShardCount },
    shards: owners.map((owner, index) => ({
      index,
      owner,
      leased: owner !== null && !expired.includes(index),
      epoch: owner === null ? 0 : 1,
    })),
    members: members.map((id) => ({ id, lastSeen: NOW })),
    serverTime: NOW,
  };
}

describe('shardShares', () => {
  it('gives floor(n/m) each and one more to the first n mod m members by id', () => {
    expect(Object.fromEntries(shardShares(['c', 'a', 'b'], 8))).toEqual({ a: 3, b: 3, c: 2 });
    expect(Object.fromEntries(shardShares(['b', 'a'], 4))).toEqual({ a: 2, b: 2 });
    expect(Object.fromEntries(shardShares(['a', 'b', 'c'], 2))).toEqual({ a: 1, b: 1, c: 0 });
  });
});

describe('planShards (Event Hubs cases)', () => {
  it('all free: a lone member claims every shard', () => {
    expect(planShards(view([null, null, null, null], ['a']), 'a')).toEqual({ claim: [0, 1, 2, 3], release: null, share: 4, held: 0 });
  });

  it('all free, several members: each claims its share, and their claims do not overlap', () => {
    const v = view(Array<null>(8).fill(null), ['a', 'b', 'c']);
    const plans = ['a', 'b', 'c'].map((id) => planShards(v, id));
    expect(plans.map((p) => p.claim.length)).toEqual([3, 3, 2]);
    expect(new Set(plans.flatMap((p) => p.claim)).size).toBe(8);
  });

  it('a member not yet listed counts itself as live', () => {
    const plan = planShards(view([null, null], ['a']), 'b');
    expect(plan.share).toBe(1);
    expect(plan.claim).toHaveLength(1);
  });

  it('balanced, even: nobody claims or releases', () => {
    const v = view(['a', 'a', 'b', 'b'], ['a', 'b']);
    for (const id of ['a', 'b']) expect(planShards(v, id)).toMatchObject({ claim: [], release: null });
  });

  it('balanced, odd: the member holding the extra shard keeps it, even when the extra share is another member’s', () => {
    // 3 shards over a and b: a's share is 2, b's 1, but b holds 2 and a 1: nobody is below floor(3/2) = 1.
    const v = view(['a', 'b', 'b'], ['a', 'b']);
    expect(planShards(v, 'a')).toEqual({ claim: [], release: null, share: 2, held: 1 });
    expect(planShards(v, 'b')).toEqual({ claim: [], release: null, share: 1, held: 2 });
    const seven = view(['a', 'a', 'a', 'b', 'b', 'c', 'c'], ['a', 'b', 'c']);
    for (const id of ['a', 'b', 'c']) expect(planShards(seven, id)).toMatchObject({ claim: [], release: null });
  });

  it('must hand over: a member above its share releases its highest shard to a member below floor(n/m), one per round', () => {
    const v = view(['a', 'a', 'a', 'a'], ['a', 'b']);
    expect(planShards(v, 'a')).toEqual({ claim: [], release: 3, share: 2, held: 4 });
    // b finds nothing free: it waits for the release, it never breaks a lease.
    expect(planShards(v, 'b')).toEqual({ claim: [], release: null, share: 2, held: 0 });
    // Once released, b claims it.
    expect(planShards(view(['a', 'a', 'a', null], ['a', 'b']), 'b').claim).toEqual([3]);
  });

  it('hands over only what must move: with one member short, only the most loaded member releases', () => {
    // 8 shards, 3 members (shares 3/3/2, floor 2): a holds 4, b 4, c 0 → c is 2 short: both release.
    expect(planShards(view(['a', 'a', 'a', 'a', 'b', 'b', 'b', 'b'], ['a', 'b', 'c']), 'a').release).toBe(3);
    expect(planShards(view(['a', 'a', 'a', 'a', 'b', 'b', 'b', 'b'], ['a', 'b', 'c']), 'b').release).toBe(7);
    // a holds 4, b 3, c 1 → c is 1 short: only a (the most loaded) releases.
    const v = view(['a', 'a', 'a', 'a', 'b', 'b', 'b', 'c'], ['a', 'b', 'c']);
    expect(planShards(v, 'a').release).toBe(3);
    expect(planShards(v, 'b').release).toBeNull();
  });

  it('releases nothing while a free shard covers the shortfall', () => {
    // 8 shards over a, b, c (shares 3/3/2, floor 2): a holds 4, b 2, c 1, one is free: c takes the free one.
    const v = view(['a', 'a', 'a', 'a', 'b', 'b', 'c', null], ['a', 'b', 'c']);
    expect(planShards(v, 'a')).toEqual({ claim: [], release: null, share: 3, held: 4 });
    expect(planShards(v, 'c').claim).toEqual([7]);
    // Without the free shard, a releases one.
    expect(planShards(view(['a', 'a', 'a', 'a', 'b', 'b', 'c', 'b'], ['a', 'b', 'c']), 'a').release).toBe(3);
  });

  it('expired owner: a shard whose lease ran out is free, taken by a member with room, even when its old owner is listed', () => {
    const v = view(['a', 'a', 'b', 'b'], ['a', 'b'], [2, 3]);
    expect(planShards(v, 'a')).toEqual({ claim: [], release: null, share: 2, held: 2 });
    // b's leases ran out while b still heartbeats (a stalled runner): b takes them back first.
    expect(planShards(v, 'b').claim).toEqual([2, 3]);
    // b is gone: a, alone, claims them.
    expect(planShards(view(['a', 'a', 'b', 'b'], ['a'], [2, 3]), 'a').claim).toEqual([2, 3]);
  });

  it('a shard leased by a member no longer live is not claimed before its lease runs out', () => {
    expect(planShards(view(['a', 'a', 'b', 'b'], ['a']), 'a')).toEqual({ claim: [], release: null, share: 4, held: 2 });
  });

  it('does not claim a shard it released itself within the last intervals', () => {
    // 8 shards, a and b (share 4 each): a released 0 and 2 for b, which has not claimed them yet.
    const v = view([null, 'a', null, 'a', 'a', 'b', 'b', 'b'], ['a', 'b']);
    expect(planShards(v, 'a', [0]).claim).toEqual([2]);
    expect(planShards(v, 'a', new Set([0, 2])).claim).toEqual([]);
    // With nobody else short (b left), a takes them back at once.
    expect(planShards(view([null, 'a', null, 'a', 'a', null, null, null], ['a']), 'a', [0, 2]).claim).toHaveLength(5);
  });

  it('more members than shards: the first members by id get a shard, the others are standbys', () => {
    const v = view([null, null], ['d', 'c', 'b', 'a']);
    expect(planShards(v, 'a')).toMatchObject({ share: 1, claim: [0] });
    expect(planShards(v, 'b')).toMatchObject({ share: 1, claim: [1] });
    expect(planShards(v, 'c')).toEqual({ claim: [], release: null, share: 0, held: 0 });
    // A standby that holds a shard keeps it: nobody is below floor(2/4) = 0.
    expect(planShards(view(['d', 'a'], ['a', 'b', 'c', 'd']), 'd')).toEqual({ claim: [], release: null, share: 0, held: 1 });
    // One holding both (it was alone before the others came) gives one up.
    expect(planShards(view(['d', 'd'], ['a', 'b', 'c', 'd']), 'd')).toEqual({ claim: [], release: 1, share: 0, held: 2 });
  });

  it('prefers a free shard it held last', () => {
    const v: OwnershipView = {
      ...view([null, null, null, null], ['a', 'b']),
      shards: [0, 1, 2, 3].map((index) => ({ index, leased: false, owner: index === 3 ? 'a' : null, epoch: 1 })),
    };
    expect(planShards(v, 'a').claim).toEqual([3, 0]);
  });
});
