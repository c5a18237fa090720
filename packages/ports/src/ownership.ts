import type { OperationOptions } from './task-queue';
import type { CoordinatorLease } from './workflow-store';

/**
 * Coordinator shards (docs/sharding.md): a deployment's workflows are split into a fixed number of
 * shards, each with its own completion queue and lease; coordinators share the shards out among
 * themselves through this port (blob leases and ETags on Azure).
 */

/** The shard counts a deployment may have: each divides the 16 index partitions. */
export const SHARD_COUNTS = [1, 2, 4, 8, 16] as const;
export type ShardCount = (typeof SHARD_COUNTS)[number];

/** The manifest's format version this code writes and reads. */
export const SHARD_MANIFEST_VERSION = 1;

/** `_shards/manifest.json`; absent means one shard. */
export interface ShardManifest {
  readonly version: typeof SHARD_MANIFEST_VERSION;
  readonly shards: ShardCount;
}

/** A member (coordinator) counts as live this long after its last heartbeat, by the store's clock. */
export const MEMBER_LIVE_FOR_MS = 60_000;

/** One shard as {@link OwnershipStore.list} sees it. */
export interface ShardOwnership {
  readonly index: number;
  /** Whether its lease is held right now (by anyone). */
  readonly leased: boolean;
  /** The member that last claimed it (kept after a release or expiry; `leased` says whether it still holds it). */
  readonly owner: string | null;
  /** Number of claims so far: each claim sets it one higher. */
  readonly epoch: number;
}

/** A coordinator that has heartbeated within {@link MEMBER_LIVE_FOR_MS}. */
export interface ShardMember {
  readonly id: string;
  /** Its last heartbeat, by the store's clock. */
  readonly lastSeen: Date;
}

/** The manifest as read, with the ETag it was read at. */
export interface ShardManifestRead {
  readonly manifest: ShardManifest;
  readonly etag: string;
}

/** Everything a balancer decides from, read at one time. */
export interface OwnershipView {
  readonly manifest: ShardManifest;
  /** One per shard, by index. */
  readonly shards: readonly ShardOwnership[];
  /** Live members only. */
  readonly members: readonly ShardMember[];
  /** The store's time at the read (on Azure, the response's `Date`), so members' clocks never matter. */
  readonly serverTime: Date;
}

/** A shard taken by {@link OwnershipStore.claim}: the lease renews itself until released or lost. */
export interface ShardClaim {
  readonly shard: number;
  /** The epoch this claim wrote. */
  readonly epoch: number;
  readonly owner: string;
  readonly lease: CoordinatorLease;
  /**
   * Stops renewing the lease without giving it up: it runs out within its duration (counted from
   * its last renewal), then `lease.lost` fires (a `lease-lost` error), even when nobody reads the
   * shard. For a runner stalled for half a lease: nobody takes the shard before the stalled
   * runner's lease has run out, and the runner is told it lost it. Harmless once released or lost.
   */
  stopRenewing(): void;
}

/** Shard manifest, shard leases and members of a deployment. Adapters pass `@jobq/ports/testing`'s ownership suite. */
export interface OwnershipStore {
  /** The manifest and its ETag; null when there is none (a one-shard deployment). `unsupported` for an unknown version. */
  readManifest(options?: OperationOptions): Promise<{ manifest: ShardManifest; etag: string } | null>;
  /**
   * A conditional read of the manifest (If-None-Match `etag` on Azure): `'unchanged'` while it is
   * still at `etag` — or, with `etag` null (none seen), while there still is none; else what
   * {@link readManifest} returns. For the readers that refresh it, such as the workers' routing
   * (docs/sharding.md#routing).
   */
  readManifestIfChanged(etag: string | null, options?: OperationOptions): Promise<ShardManifestRead | null | 'unchanged'>;
  /** Creates the manifest (If-None-Match); when another creates it first, returns theirs. */
  ensureManifest(shards: ShardCount, options?: OperationOptions): Promise<ShardManifest>;
  /**
   * Replaces the manifest with one of more shards, a multiple of the current count, if it is still
   * at `etag` (`conflict` otherwise); `lease-held` while any shard lease is held; `invalid-argument`
   * for a count that does not grow by a multiple. Without a manifest (one shard), `etag` is `''`
   * and the manifest is created only if there still is none.
   */
  growManifest(shards: ShardCount, etag: string, options?: OperationOptions): Promise<ShardManifest>;
  /** The manifest (one shard when absent), every shard's ownership, the live members and the store's time. */
  list(options?: OperationOptions): Promise<OwnershipView>;
  /**
   * Takes shard `shard`'s lease for `owner`, then writes owner and epoch + 1 under the lease on the
   * ETag read with it. Null when another member won the race (the lease is held, or the write found
   * a newer ETag); then nothing is held.
   */
  claim(shard: number, owner: string, options?: OperationOptions): Promise<ShardClaim | null>;
  /** Gives up a shard this store holds (its lease); harmless when it holds none. */
  release(shard: number): Promise<void>;
  /** Breaks shard `shard`'s lease, whoever holds it (`break-lease --shard`). */
  breakLease(shard: number, options?: OperationOptions): Promise<void>;
  /** Records that `memberId` is alive now (`_shards/members/{id}.json` on Azure). */
  heartbeat(memberId: string, options?: OperationOptions): Promise<void>;
  /** Removes `memberId`'s record (a clean shutdown); harmless when absent. */
  leave(memberId: string, options?: OperationOptions): Promise<void>;
}
