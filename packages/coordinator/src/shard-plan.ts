import type { OwnershipView } from '@jobq/ports';

/**
 * The balancer's decision for one member, from one {@link OwnershipView} (docs/sharding.md): which
 * shards to claim, and at most one to release. A pure function: the {@link ShardBalancer} loop reads
 * the view, asks this, and claims or releases.
 */
export interface ShardPlan {
  /** Free shards to claim, in the order to try them (a claim lost to another member is skipped). */
  readonly claim: readonly number[];
  /** A shard this member holds to give up so that a member below its share can take it; null: none. */
  readonly release: number | null;
  /** This member's share: how many shards it aims to hold. */
  readonly share: number;
  /** How many shards it holds now. */
  readonly held: number;
}

/**
 * The share of each member, Event Hubs style: n shards over m live members is floor(n/m) each, one
 * more for n mod m of them, those first in member id order. Members with no share (more members
 * than shards) get 0: they are standbys.
 */
export function shardShares(memberIds: readonly string[], shards: number): Map<string, number> {
  const sorted = [...new Set(memberIds)].sort();
  const out = new Map<string, number>();
  if (sorted.length === 0) return out;
  const base = Math.floor(shards / sorted.length);
  const extra = shards % sorted.length;
  sorted.forEach((id, i) => out.set(id, base + (i < extra ? 1 : 0)));
  return out;
}

/**
 * Plans one balancing round for `memberId` (docs/sharding.md#balancing):
 *
 * - it claims free shards (no lease held: never claimed, released, or expired with their owner)
 *   up to its share, never one it released itself within the last intervals (`recentlyReleased`);
 *   a free shard it owned last comes first, then the others from where the shares of the members
 *   before it (by id) end, so that members claiming at the same time rarely race for the same shard;
 * - when it holds more than its share while some member holds fewer than floor(n/m), and the free
 *   shards do not cover those members' shortfall, it releases one shard, its highest index. Only as
 *   many members release as the shortfall needs (the most loaded first, then by id), so one round
 *   moves only what must move, and a release never takes a member below floor(n/m). A member
 *   holding more than floor(n/m) + 1 also releases one when no shard is free (with more members
 *   than shards, floor(n/m) is 0: nobody is ever below it).
 *
 * Balanced (nothing more moves): every shard is held and every member holds floor(n/m) or one more.
 *
 * It never takes a shard whose lease is held (a lease is never broken). The member itself counts as
 * live even when the view does not list it yet (its first heartbeat may not be visible).
 */
export function planShards(
  view: OwnershipView,
  memberId: string,
  recentlyReleased: ReadonlySet<number> | readonly number[] = [],
): ShardPlan {
  const recent = recentlyReleased instanceof Set ? recentlyReleased : new Set(recentlyReleased as readonly number[]);
  const n = view.shards.length;
  const memberIds = [...new Set([...view.members.map((m) => m.id), memberId])].sort();
  const m = memberIds.length;
  const shares = shardShares(memberIds, n);
  const floor = Math.floor(n / m);
  const share = shares.get(memberId) ?? 0;

  const holds = new Map<string, number[]>(memberIds.map((id) => [id, []]));
  const free: number[] = [];
  for (const shard of view.shards) {
    if (!shard.leased) free.push(shard.index);
    else if (shard.owner !== null) holds.get(shard.owner)?.push(shard.index);
    // A shard leased by no live member (an owner not yet written, or a member that stopped
    // heartbeating whose lease still runs) is neither free nor anyone's: it waits for its expiry.
  }
  const mine = holds.get(memberId) ?? [];
  const held = mine.length;

  // A shard it released itself is left to the members it was released for: skipped while another
  // member holds less than its share (alone, or with everyone served, it takes it back at once).
  const othersShort = memberIds.some((id) => id !== memberId && (holds.get(id)?.length ?? 0) < (shares.get(id) ?? 0));
  const claim: number[] = [];
  if (held < share) {
    // Members claiming all at once (a fresh deployment) start where the shares before theirs end.
    let start = 0;
    for (const id of memberIds) {
      if (id === memberId) break;
      start += shares.get(id) ?? 0;
    }
    start %= Math.max(1, n);
    const candidates = free
      .filter((k) => !othersShort || !recent.has(k))
      .sort((a, b) => {
        const ownA = view.shards[a]?.owner === memberId ? 0 : 1;
        const ownB = view.shards[b]?.owner === memberId ? 0 : 1;
        if (ownA !== ownB) return ownA - ownB;
        return ((a - start + n) % n) - ((b - start + n) % n);
      });
    claim.push(...candidates.slice(0, share - held));
  }

  let release: number | null = null;
  if (held > share) {
    let shortfall = 0;
    for (const id of memberIds) shortfall += Math.max(0, floor - (holds.get(id)?.length ?? 0));
    const needed = shortfall - free.length;
    // The members above their share, most loaded first: the first `needed` of them release one each.
    const over = memberIds
      .filter((id) => (holds.get(id)?.length ?? 0) > (shares.get(id) ?? 0))
      .sort((a, b) => (holds.get(b)?.length ?? 0) - (holds.get(a)?.length ?? 0) || (a < b ? -1 : a > b ? 1 : 0));
    // Holding two or more above floor(n/m) (more members than shards: floor 0), it sheds one even
    // with nobody below floor, once no free shard is left: some member is below its share to take it.
    if ((needed > 0 && over.indexOf(memberId) < needed) || (held > floor + 1 && free.length === 0)) release = Math.max(...mine);
  }
  return { claim, release, share, held };
}
