import {
  JobqError,
  MEMBER_LIVE_FOR_MS,
  SHARD_MANIFEST_VERSION,
  checkShardCount,
  checkShardIndex,
  checkShardMemberId,
  parseShardManifest,
  realClock,
  type Clock,
  type CoordinatorLease,
  type OperationOptions,
  type OwnershipStore,
  type OwnershipView,
  type ShardClaim,
  type ShardCount,
  type ShardManifest,
  type ShardManifestRead,
  type ShardMember,
} from '@jobq/ports';

/** A held shard lease: it expires only when its holder stops renewing (its claim's `stopRenewing`, or {@link MemoryOwnershipStore.crash}). */
class MemoryShardLease implements CoordinatorLease {
  private readonly controller = new AbortController();
  /** Fires when the lease ends (lost or released): cancels the expiry timer of {@link stopRenewing}. */
  private readonly ending = new AbortController();
  /** Store time after which the lease is free; `Infinity` while its holder renews it. */
  expiresAt = Number.POSITIVE_INFINITY;
  ended = false;
  private stopped = false;

  constructor(
    readonly leaseId: string,
    readonly holder: MemoryOwnershipStore,
    private readonly onRelease: (lease: MemoryShardLease) => void,
  ) {}

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  lose(why: string): void {
    if (this.ended) return;
    this.ended = true;
    this.ending.abort();
    this.controller.abort(new JobqError('lease-lost', `the shard lease was lost (${why}); stop writing`));
  }

  /**
   * Its holder stops renewing it: it runs out `durationInMs` of store time from now (or sooner, if
   * it was to already), and `lost` fires then, whether or not anyone reads the shard.
   */
  stopRenewing(durationInMs: number, expire: () => void): void {
    if (this.ended || this.stopped) return;
    this.stopped = true;
    const clock = this.holder.deployment.clock;
    this.expiresAt = Math.min(this.expiresAt, clock.now() + durationInMs);
    void clock.sleep(this.expiresAt - clock.now(), this.ending.signal).then(() => {
      if (!this.ended) expire();
    });
  }

  release(): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      this.ending.abort();
      this.onRelease(this);
    }
    return Promise.resolve();
  }
}

interface ShardState {
  owner: string | null;
  epoch: number;
  lease: MemoryShardLease | null;
}

/**
 * What the stores of one deployment share, as its storage account holds it: the manifest, every
 * shard's lease, owner and epoch, and the members' last heartbeats. Give the same one to every
 * {@link MemoryOwnershipStore} that stands for a coordinator process of the deployment.
 */
export class MemoryOwnershipDeployment {
  /** The manifest's text and its ETag (null: none). */
  manifest: { text: string; etag: string } | null = null;
  readonly shards = new Map<number, ShardState>();
  readonly members = new Map<string, number>();
  private nextTag = 1;

  constructor(readonly clock: Clock = realClock) {}

  tag(): string {
    return `"m${this.nextTag++}"`;
  }

  shard(index: number): ShardState {
    let state = this.shards.get(index);
    if (state === undefined) {
      state = { owner: null, epoch: 0, lease: null };
      this.shards.set(index, state);
    }
    return state;
  }

  /** The shard's lease if it is still held (an expired one is dropped, and its holder loses it). */
  heldLease(index: number): MemoryShardLease | null {
    const state = this.shard(index);
    const lease = state.lease;
    if (lease !== null && (lease.ended || this.clock.now() >= lease.expiresAt)) {
      state.lease = null;
      lease.lose('it expired');
      return null;
    }
    return lease;
  }
}

/** Options of {@link MemoryOwnershipStore}. */
export interface MemoryOwnershipStoreOptions {
  /** The deployment's shared state (default: a new one, on `clock`). Stores given the same one see each other. */
  deployment?: MemoryOwnershipDeployment;
  /** The store's clock (default the real clock; ignored when `deployment` is given: the deployment's clock is the store's). */
  clock?: Clock;
  /** How long a lease lasts once its holder stops renewing (see {@link MemoryOwnershipStore.crash}). Default 60 000. */
  leaseDurationInMs?: number;
}

function checkAborted(options: OperationOptions | undefined, what: string): void {
  if (options?.abortSignal?.aborted) throw new JobqError('aborted', `${what} was aborted by the caller`);
}

/**
 * {@link OwnershipStore} in memory, with the Azure adapter's semantics: a manifest created once
 * (If-None-Match) and grown on its ETag, one lease per shard, owner and epoch written by the claim
 * that took the lease, members live for {@link MEMBER_LIVE_FOR_MS} after their last heartbeat by the
 * store's clock. A store stands for one coordinator process; the stores of a deployment share a
 * {@link MemoryOwnershipDeployment}. A lease held by a live store never runs out (as a renewed blob
 * lease); {@link crash} stops the renewals, and its leases run out `leaseDurationInMs` later.
 * Passes `@jobq/ports/testing`'s ownership suite.
 */
export class MemoryOwnershipStore implements OwnershipStore {
  readonly deployment: MemoryOwnershipDeployment;
  readonly leaseDurationInMs: number;
  /** Requests served, counted (for tests and the simulation); `readManifest` counts the conditional reads too. */
  readonly calls = { readManifest: 0, list: 0, claim: 0, heartbeat: 0 };
  private readonly held = new Map<number, MemoryShardLease>();
  private nextLease = 1;
  private crashed = false;

  constructor(options: MemoryOwnershipStoreOptions = {}) {
    this.deployment = options.deployment ?? new MemoryOwnershipDeployment(options.clock ?? realClock);
    this.leaseDurationInMs = options.leaseDurationInMs ?? 60_000;
  }

  private get clock(): Clock {
    return this.deployment.clock;
  }

  private now(): number {
    return this.clock.now();
  }

  private current(): { manifest: ShardManifest; etag: string } | null {
    const stored = this.deployment.manifest;
    return stored === null ? null : { manifest: parseShardManifest(stored.text), etag: stored.etag };
  }

  readManifest(options?: OperationOptions): Promise<{ manifest: ShardManifest; etag: string } | null> {
    return run(() => {
      checkAborted(options, 'read the shard manifest');
      this.calls.readManifest++;
      return this.current();
    });
  }

  readManifestIfChanged(etag: string | null, options?: OperationOptions): Promise<ShardManifestRead | null | 'unchanged'> {
    return run(() => {
      checkAborted(options, 'read the shard manifest');
      this.calls.readManifest++;
      const stored = this.deployment.manifest;
      if ((stored?.etag ?? null) === etag) return 'unchanged';
      return this.current();
    });
  }

  ensureManifest(shards: ShardCount, options?: OperationOptions): Promise<ShardManifest> {
    return run(() => {
      checkShardCount(shards);
      checkAborted(options, 'create the shard manifest');
      const existing = this.current();
      if (existing !== null) return existing.manifest;
      const manifest: ShardManifest = { version: SHARD_MANIFEST_VERSION, shards };
      this.deployment.manifest = { text: JSON.stringify(manifest), etag: this.deployment.tag() };
      return manifest;
    });
  }

  growManifest(shards: ShardCount, etag: string, options?: OperationOptions): Promise<ShardManifest> {
    return run(() => {
      checkAborted(options, 'grow the shard manifest');
      const existing = this.current();
      checkShardCount(shards);
      const from = existing?.manifest.shards ?? 1;
      if (shards <= from || shards % from !== 0) {
        throw new JobqError(
          'invalid-argument',
          `the shard count can only grow, by a multiple of ${from} (${shards} asked); to shrink, start a new prefix and drain this one`,
        );
      }
      if ((existing?.etag ?? '') !== etag)
        throw new JobqError('conflict', 'grow the shard manifest failed: it changed since it was read; read it again');
      for (let k = 0; k < from; k++) {
        if (this.deployment.heldLease(k) !== null) {
          throw new JobqError(
            'lease-held',
            `grow the shard manifest failed: shard ${k}'s lease is held; stop every coordinator of this prefix first`,
          );
        }
      }
      const manifest: ShardManifest = { version: SHARD_MANIFEST_VERSION, shards };
      this.deployment.manifest = { text: JSON.stringify(manifest), etag: this.deployment.tag() };
      return manifest;
    });
  }

  list(options?: OperationOptions): Promise<OwnershipView> {
    return run(() => {
      checkAborted(options, 'list shard ownership');
      this.calls.list++;
      const manifest = this.current()?.manifest ?? { version: SHARD_MANIFEST_VERSION, shards: 1 };
      const shards = Array.from({ length: manifest.shards }, (_, index) => {
        const leased = this.deployment.heldLease(index) !== null;
        const { owner, epoch } = this.deployment.shard(index);
        return { index, leased, owner, epoch };
      });
      const now = this.now();
      const members: ShardMember[] = [...this.deployment.members]
        .filter(([, at]) => now - at < MEMBER_LIVE_FOR_MS)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([id, at]) => ({ id, lastSeen: new Date(at) }));
      return { manifest, shards, members, serverTime: new Date(now) };
    });
  }

  claim(shard: number, owner: string, options?: OperationOptions): Promise<ShardClaim | null> {
    return run(() => {
      checkShardIndex(shard);
      checkShardMemberId(owner);
      checkAborted(options, `claim shard ${shard}`);
      this.calls.claim++;
      if (this.deployment.heldLease(shard) !== null) return null;
      const lease = new MemoryShardLease(`memory-shard-lease-${this.nextLease++}`, this, (released) => {
        const state = this.deployment.shard(shard);
        if (state.lease === released) state.lease = null;
        if (this.held.get(shard) === released) this.held.delete(shard);
      });
      if (this.crashed) lease.expiresAt = this.now() + this.leaseDurationInMs;
      const state = this.deployment.shard(shard);
      state.lease = lease;
      state.owner = owner;
      state.epoch++;
      this.held.set(shard, lease);
      const expire = (): void => {
        // The lease ran out: the shard is free, and its holder is told (heldLease drops it as expired).
        this.deployment.heldLease(shard);
        if (this.held.get(shard) === lease) this.held.delete(shard);
      };
      return { shard, epoch: state.epoch, owner, lease, stopRenewing: () => lease.stopRenewing(this.leaseDurationInMs, expire) };
    });
  }

  release(shard: number): Promise<void> {
    const lease = this.held.get(shard);
    this.held.delete(shard);
    return lease?.release() ?? Promise.resolve();
  }

  breakLease(shard: number, options?: OperationOptions): Promise<void> {
    return run(() => {
      checkShardIndex(shard);
      checkAborted(options, `break shard ${shard}'s lease`);
      const state = this.deployment.shard(shard);
      const lease = state.lease;
      state.lease = null;
      lease?.lose('it was broken');
    });
  }

  heartbeat(memberId: string, options?: OperationOptions): Promise<void> {
    return run(() => {
      checkShardMemberId(memberId);
      checkAborted(options, `record member "${memberId}"`);
      this.calls.heartbeat++;
      this.deployment.members.set(memberId, this.now());
    });
  }

  leave(memberId: string, options?: OperationOptions): Promise<void> {
    return run(() => {
      checkShardMemberId(memberId);
      checkAborted(options, `remove member "${memberId}"`);
      this.deployment.members.delete(memberId);
    });
  }

  /**
   * This store's process dies: it renews nothing any more, so each lease it holds runs out
   * `leaseDurationInMs` of store time from now (and a later claim's too), then is free to claim.
   */
  crash(): void {
    this.crashed = true;
    const until = this.now() + this.leaseDurationInMs;
    for (const lease of this.held.values()) lease.expiresAt = Math.min(lease.expiresAt, until);
  }

  /** The shard's lease is lost as a failed renewal loses it: its `lost` fires and the shard is free (a test hook). */
  loseLease(shard: number): void {
    const lease = this.held.get(shard);
    if (lease === undefined) return;
    this.held.delete(shard);
    const state = this.deployment.shard(shard);
    if (state.lease === lease) state.lease = null;
    lease.lose('it could not be renewed');
  }
}

/** Runs `fn` as an asynchronous call (its throw a rejection), as a remote store answers. */
function run<T>(fn: () => T): Promise<T> {
  return new Promise((resolve) => resolve(fn()));
}
