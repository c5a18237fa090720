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
  type ListOwnershipOptions,
  type OperationOptions,
  type OwnershipStore,
  type OwnershipView,
  type ShardClaim,
  type ShardCount,
  type ShardManifest,
  type ShardManifestRead,
  type ShardMember,
} from '@jobq/ports';
import type { MemoryWorkflowStore } from './workflow-store';

/** One successful claim, as the deployment saw it (see {@link MemoryOwnershipDeployment.claims}). */
export interface MemoryClaimRecord {
  shard: number;
  owner: string;
  epoch: number;
  /** The store time of the claim. */
  at: number;
}

/** Requests served, counted by kind (see {@link MemoryOwnershipStore.calls} and {@link MemoryOwnershipDeployment.calls}). */
export interface MemoryOwnershipCalls {
  readManifest: number;
  list: number;
  claim: number;
  release: number;
  heartbeat: number;
  leave: number;
}

/** Injected faults of a deployment's stores (see {@link MemoryOwnershipDeployment.faults}). */
export interface MemoryOwnershipFaults {
  /** Returning true for a claim (of a free shard), that claim loses its race (as a 409/412): null, nothing taken. */
  claim?: ((shard: number, owner: string) => boolean) | undefined;
  /** Returning an error, `list()` rejects with it. */
  list?: (() => Error | null) | undefined;
}

/** Options of {@link MemoryOwnershipDeployment}. */
export interface MemoryOwnershipDeploymentOptions {
  /** The manifest it starts with (default none: one shard). */
  shards?: ShardCount;
  /** Store time each call of its stores takes before it acts (default none): members' calls then interleave. */
  latencyInMs?: () => number;
  /**
   * The deployment's workflow store: shard 0's lease is then its coordinator lease, as on Azure
   * (both are `_coordinator.lock`), so a coordinator without shards holding it holds shard 0 —
   * claims of shard 0 fail meanwhile — and a claim of shard 0 fences it (its `acquireLease` is
   * `lease-held`; with `breakExisting` the claim's holder loses it). Default none: separate leases.
   */
  workflows?: MemoryWorkflowStore;
}

function noCalls(): MemoryOwnershipCalls {
  return { readManifest: 0, list: 0, claim: 0, release: 0, heartbeat: 0, leave: 0 };
}

/** A held shard lease: it expires only when its holder stops renewing (its claim's `stopRenewing`, or {@link MemoryOwnershipStore.crash}). */
export class MemoryShardLease implements CoordinatorLease {
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
    /** Shard 0's lease in the deployment's workflow store, when it has one: held, lost and released with this one. */
    private readonly inner: CoordinatorLease | null = null,
  ) {
    inner?.lost.addEventListener('abort', () => this.lose('the coordinator lease was taken'), { once: true });
  }

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  lose(why: string): void {
    if (this.ended) return;
    this.ended = true;
    this.ending.abort();
    if (this.inner !== null) this.holder.deployment.workflows?.loseLease(why, this.inner);
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
      void this.inner?.release();
    }
    return Promise.resolve();
  }
}

/** One shard as the deployment holds it: its owner, epoch, lease and last claim time. */
export interface MemoryShardState {
  owner: string | null;
  epoch: number;
  lease: MemoryShardLease | null;
  /** Store time of the last claim; null when never claimed. */
  claimedAt: number | null;
}

/**
 * What the stores of one deployment share, as its storage account holds it: the manifest, every
 * shard's lease, owner and epoch, and the members' last heartbeats. Give the same one to every
 * {@link MemoryOwnershipStore} that stands for a coordinator process of the deployment.
 *
 * Test hooks: `latencyInMs` (option), {@link faults}, {@link calls} and {@link claims} (over all its
 * stores), {@link setManifest}, {@link holderOf}, {@link epochs}.
 */
export class MemoryOwnershipDeployment {
  /** The manifest's text and its ETag (null: none). */
  manifest: { text: string; etag: string } | null = null;
  readonly shards = new Map<number, MemoryShardState>();
  readonly members = new Map<string, number>();
  /** Requests served by all its stores, counted. */
  readonly calls: MemoryOwnershipCalls = noCalls();
  /** Every successful claim, in order. */
  readonly claims: MemoryClaimRecord[] = [];
  /** Faults injected into its stores' calls (set and clear them at will). */
  readonly faults: MemoryOwnershipFaults = {};
  readonly latencyInMs: (() => number) | null;
  /** The workflow store whose coordinator lease is shard 0's (see {@link MemoryOwnershipDeploymentOptions.workflows}). */
  readonly workflows: MemoryWorkflowStore | null;
  private nextTag = 1;

  constructor(
    readonly clock: Clock = realClock,
    options: MemoryOwnershipDeploymentOptions = {},
  ) {
    this.latencyInMs = options.latencyInMs ?? null;
    this.workflows = options.workflows ?? null;
    if (options.shards !== undefined) this.setManifest(options.shards);
  }

  /** Writes the manifest behind the stores' backs, as another coordinator's grow would (no check of leases or ETag). */
  setManifest(shards: ShardCount): void {
    checkShardCount(shards);
    this.manifest = { text: JSON.stringify({ version: SHARD_MANIFEST_VERSION, shards }), etag: this.tag() };
  }

  /** The owner of shard `index` while its lease is held; null when it is free. */
  holderOf(index: number): string | null {
    return this.heldLease(index) === null ? null : this.shard(index).owner;
  }

  /** The epoch of each shard of the manifest (one shard without one). */
  epochs(): number[] {
    const stored = this.manifest;
    const n = stored === null ? 1 : parseShardManifest(stored.text).shards;
    return Array.from({ length: n }, (_, k) => this.shard(k).epoch);
  }

  tag(): string {
    return `"m${this.nextTag++}"`;
  }

  shard(index: number): MemoryShardState {
    let state = this.shards.get(index);
    if (state === undefined) {
      state = { owner: null, epoch: 0, lease: null, claimedAt: null };
      this.shards.set(index, state);
    }
    return state;
  }

  /** Whether shard `index` is leased: its claim's lease is held, or (shard 0) a coordinator without shards holds the workflow store's lease. */
  leased(index: number): boolean {
    return this.heldLease(index) !== null || (index === 0 && this.workflows?.leaseHeld === true);
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
 *
 * Test hooks: {@link crash} (optionally `unreachable`), {@link loseLease}, {@link calls}; and the
 * deployment's (latency, faults, the record of claims).
 */
export class MemoryOwnershipStore implements OwnershipStore {
  readonly deployment: MemoryOwnershipDeployment;
  readonly leaseDurationInMs: number;
  /** Requests served by this store, counted (for tests and the simulation; the deployment counts all its stores'); `readManifest` counts the conditional reads too. */
  readonly calls: MemoryOwnershipCalls = noCalls();
  private readonly held = new Map<number, MemoryShardLease>();
  private nextLease = 1;
  private crashed = false;
  private unreachable = false;

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

  private count(kind: keyof MemoryOwnershipCalls): void {
    this.calls[kind]++;
    this.deployment.calls[kind]++;
  }

  /**
   * One request: it takes the deployment's latency (if any) on the clock, then acts at once — unless
   * this store's process was killed meanwhile ({@link crash} with `unreachable`): then it fails
   * `unavailable` and never reaches the deployment.
   */
  private call<T>(fn: () => T): Promise<T> {
    const act = (): T => {
      if (this.unreachable) throw new JobqError('unavailable', 'the ownership store cannot be reached: its process was killed');
      return fn();
    };
    const latency = this.deployment.latencyInMs;
    return latency === null ? run(act) : this.clock.sleep(latency()).then(act);
  }

  private current(): { manifest: ShardManifest; etag: string } | null {
    const stored = this.deployment.manifest;
    return stored === null ? null : { manifest: parseShardManifest(stored.text), etag: stored.etag };
  }

  readManifest(options?: OperationOptions): Promise<{ manifest: ShardManifest; etag: string } | null> {
    return this.call(() => {
      checkAborted(options, 'read the shard manifest');
      this.count('readManifest');
      return this.current();
    });
  }

  readManifestIfChanged(etag: string | null, options?: OperationOptions): Promise<ShardManifestRead | null | 'unchanged'> {
    return this.call(() => {
      checkAborted(options, 'read the shard manifest');
      this.count('readManifest');
      const stored = this.deployment.manifest;
      if ((stored?.etag ?? null) === etag) return 'unchanged';
      return this.current();
    });
  }

  ensureManifest(shards: ShardCount, options?: OperationOptions): Promise<ShardManifest> {
    return this.call(() => {
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
    return this.call(() => {
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
        if (this.deployment.leased(k)) {
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

  list(options?: ListOwnershipOptions): Promise<OwnershipView> {
    return this.call(() => {
      checkAborted(options, 'list shard ownership');
      this.count('list');
      const fault = this.deployment.faults.list?.() ?? null;
      if (fault !== null) throw fault;
      const manifest = this.current()?.manifest ?? { version: SHARD_MANIFEST_VERSION, shards: 1 };
      const shards = Array.from({ length: manifest.shards }, (_, index) => {
        const leased = this.deployment.leased(index);
        const { owner, epoch, claimedAt } = this.deployment.shard(index);
        const shard = { index, leased, owner, epoch };
        return options?.claimTimes === true ? { ...shard, claimedAt: claimedAt === null ? null : new Date(claimedAt) } : shard;
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
    return this.call(() => {
      checkShardIndex(shard);
      checkShardMemberId(owner);
      checkAborted(options, `claim shard ${shard}`);
      this.count('claim');
      if (this.deployment.heldLease(shard) !== null) return null;
      if (this.deployment.faults.claim?.(shard, owner) === true) return null;
      // Shard 0 over a workflow store: its coordinator lease, unless a coordinator without shards holds it.
      const workflows = shard === 0 ? this.deployment.workflows : null;
      const inner = workflows === null ? null : workflows.tryAcquireLease();
      if (workflows !== null && inner === null) return null;
      const lease = new MemoryShardLease(
        `memory-shard-lease-${this.nextLease++}`,
        this,
        (released) => {
          const state = this.deployment.shard(shard);
          if (state.lease === released) state.lease = null;
          if (this.held.get(shard) === released) this.held.delete(shard);
        },
        inner,
      );
      const state = this.deployment.shard(shard);
      state.lease = lease;
      state.owner = owner;
      state.epoch++;
      state.claimedAt = this.now();
      this.held.set(shard, lease);
      this.deployment.claims.push({ shard, owner, epoch: state.epoch, at: this.now() });
      const stopRenewing = (): void => this.stopRenewing(shard, lease);
      if (this.crashed) stopRenewing();
      return { shard, epoch: state.epoch, owner, lease, stopRenewing };
    });
  }

  /** The lease stops being renewed: it runs out `leaseDurationInMs` from now, frees the shard and fires its `lost` then. */
  private stopRenewing(shard: number, lease: MemoryShardLease): void {
    lease.stopRenewing(this.leaseDurationInMs, () => {
      // The lease ran out: the shard is free, and its holder is told (heldLease drops it as expired).
      this.deployment.heldLease(shard);
      if (this.held.get(shard) === lease) this.held.delete(shard);
    });
  }

  release(shard: number): Promise<void> {
    return this.call(() => {
      this.count('release');
      const lease = this.held.get(shard);
      this.held.delete(shard);
      void lease?.release();
    });
  }

  breakLease(shard: number, options?: OperationOptions): Promise<void> {
    return this.call(() => {
      checkShardIndex(shard);
      checkAborted(options, `break shard ${shard}'s lease`);
      const state = this.deployment.shard(shard);
      const lease = state.lease;
      state.lease = null;
      lease?.lose('it was broken');
      // Shard 0 over a workflow store: whoever holds its coordinator lease loses it too.
      if (shard === 0) this.deployment.workflows?.loseLease('it was broken');
    });
  }

  heartbeat(memberId: string, options?: OperationOptions): Promise<void> {
    return this.call(() => {
      checkShardMemberId(memberId);
      checkAborted(options, `record member "${memberId}"`);
      this.count('heartbeat');
      this.deployment.members.set(memberId, this.now());
    });
  }

  leave(memberId: string, options?: OperationOptions): Promise<void> {
    return this.call(() => {
      checkShardMemberId(memberId);
      checkAborted(options, `remove member "${memberId}"`);
      this.count('leave');
      this.deployment.members.delete(memberId);
    });
  }

  /**
   * This store's process dies: it renews nothing any more, so each lease it holds runs out
   * `leaseDurationInMs` of store time from now (and a later claim's too), then is free to claim, and
   * its holder's `lost` fires then. With `unreachable`, its calls fail `unavailable` from now on —
   * those still in their latency too — as a killed process's requests never reach the service.
   */
  crash(options: { unreachable?: boolean } = {}): void {
    this.crashed = true;
    if (options.unreachable === true) this.unreachable = true;
    for (const [shard, lease] of [...this.held]) this.stopRenewing(shard, lease);
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
