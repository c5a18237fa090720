import {
  JobqError,
  MEMBER_LIVE_FOR_MS,
  SHARD_COUNTS,
  SHARD_MANIFEST_VERSION,
  type Clock,
  type CoordinatorLease,
  type OwnershipStore,
  type OwnershipView,
  type ShardClaim,
  type ShardCount,
  type ShardManifest,
} from '@jobq/ports';

// A small in-test implementation of the OwnershipStore port on a clock, with the semantics the
// balancer relies on: a shard lease is held by one member at a time, renews itself until released,
// runs out `leaseDurationInMs` after its renewals stop (a crash, `stopRenewing`), and is never
// broken by a claim; every claim sets owner and epoch + 1; a member is live for MEMBER_LIVE_FOR_MS
// after its heartbeat. Each member has a store of its own (`storeFor`), as each coordinator has on
// Azure: it releases only the leases it holds.

class FakeLease implements CoordinatorLease {
  readonly leaseId: string;
  private readonly lostController = new AbortController();
  private readonly stopTimer = new AbortController();
  released = false;
  /** Null while renewing; else when it runs out. */
  expiresAt: number | null = null;

  constructor(
    readonly shard: number,
    readonly member: string,
    id: number,
    private readonly clock: Clock,
    private readonly durationInMs: number,
  ) {
    this.leaseId = `fake-lease-${id}`;
  }

  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  /** Whether the lease is held right now. */
  held(): boolean {
    if (this.released || this.lost.aborted) return false;
    if (this.expiresAt !== null && this.clock.now() >= this.expiresAt) {
      this.lose('the lease ran out');
      return false;
    }
    return true;
  }

  /** Stops the renewals: it runs out after its duration, then `lost` fires. */
  stopRenewing(): void {
    if (this.expiresAt !== null || !this.held()) return;
    const at = this.clock.now() + this.durationInMs;
    this.expiresAt = at;
    void this.clock.sleep(this.durationInMs, this.stopTimer.signal).then(() => {
      if (!this.stopTimer.signal.aborted) this.held();
    });
  }

  lose(why: string): void {
    this.stopTimer.abort();
    if (!this.released && !this.lost.aborted)
      this.lostController.abort(new JobqError('lease-lost', `the lease of shard ${this.shard} was lost (${why}); stop writing`));
  }

  release(): Promise<void> {
    if (!this.released) {
      this.released = true;
      this.stopTimer.abort();
    }
    return Promise.resolve();
  }
}

interface ShardState {
  owner: string | null;
  epoch: number;
  lease: FakeLease | null;
}

/** One successful claim, as the world saw it. */
export interface ClaimRecord {
  shard: number;
  owner: string;
  epoch: number;
  at: number;
}

/** Options of {@link FakeOwnership}. */
export interface FakeOwnershipOptions {
  clock: Clock;
  /** The manifest's shard count (default: no manifest, one shard). */
  shards?: ShardCount;
  /** How long a lease lasts after its renewals stop (default 60 s). */
  leaseDurationInMs?: number;
  /** Virtual ms each call takes before it acts (default none): members' rounds then interleave. */
  latencyInMs?: () => number;
}

/** The shared state of a deployment's shards; {@link storeFor} gives each member its store. */
export class FakeOwnership {
  readonly clock: Clock;
  readonly leaseDurationInMs: number;
  private readonly latencyInMs: (() => number) | null;
  /** Every successful claim, in order. */
  readonly claims: ClaimRecord[] = [];
  /** Calls by kind, over all members. */
  readonly calls = { list: 0, claim: 0, release: 0, heartbeat: 0, leave: 0 };
  /** When set and returning true, that claim loses its race (as a 409/412): nothing is taken. */
  claimFault: ((shard: number, owner: string) => boolean) | null = null;
  /** When set and returning an error, `list()` rejects with it. */
  listFault: (() => Error | null) | null = null;
  private manifest: ShardManifest | null;
  private manifestEtag = 1;
  private shards: ShardState[];
  private readonly members = new Map<string, number>();
  private nextLease = 1;
  private readonly dead = new Set<string>();

  constructor(options: FakeOwnershipOptions) {
    this.clock = options.clock;
    this.leaseDurationInMs = options.leaseDurationInMs ?? 60_000;
    this.latencyInMs = options.latencyInMs ?? null;
    this.manifest = options.shards === undefined ? null : { version: SHARD_MANIFEST_VERSION, shards: options.shards };
    this.shards = this.fresh(this.manifest?.shards ?? 1);
  }

  private fresh(n: number): ShardState[] {
    return Array.from({ length: n }, () => ({ owner: null, epoch: 0, lease: null }));
  }

  /** The current lease of shard `k` if held. */
  holderOf(k: number): string | null {
    const lease = this.shards[k]?.lease;
    return lease?.held() ? lease.member : null;
  }

  /**
   * `memberId`'s process dies: the leases it holds are no longer renewed (they run out after their
   * duration) and its store answers nothing any more.
   */
  crash(memberId: string): void {
    this.dead.add(memberId);
    for (const s of this.shards) if (s.lease?.member === memberId) s.lease.stopRenewing();
  }

  /** Replaces the manifest (another coordinator grew it); shards beyond the old count start free. */
  setManifest(shards: ShardCount): void {
    this.manifest = { version: SHARD_MANIFEST_VERSION, shards };
    this.manifestEtag++;
    while (this.shards.length < shards) this.shards.push({ owner: null, epoch: 0, lease: null });
  }

  epochs(): number[] {
    return this.shards.map((s) => s.epoch);
  }

  storeFor(memberId: string): OwnershipStore {
    const mine = new Set<FakeLease>();
    const store: OwnershipStore = {
      readManifest: () => Promise.resolve(this.manifest === null ? null : { manifest: this.manifest, etag: String(this.manifestEtag) }),
      readManifestIfChanged: (etag) =>
        Promise.resolve(
          (this.manifest === null ? null : String(this.manifestEtag)) === etag
            ? 'unchanged'
            : this.manifest === null
              ? null
              : { manifest: this.manifest, etag: String(this.manifestEtag) },
        ),
      ensureManifest: (shards) => {
        if (this.manifest === null) this.setManifest(shards);
        return Promise.resolve(this.manifest!);
      },
      growManifest: (shards, etag) => {
        if (etag !== String(this.manifestEtag)) return Promise.reject(new JobqError('conflict', 'the manifest changed'));
        if (this.shards.some((s) => s.lease?.held())) return Promise.reject(new JobqError('lease-held', 'a shard lease is held'));
        const current = this.manifest?.shards ?? 1;
        if (!(SHARD_COUNTS as readonly number[]).includes(shards) || shards <= current || shards % current !== 0) {
          return Promise.reject(new JobqError('invalid-argument', `cannot grow ${current} shards to ${shards}`));
        }
        this.setManifest(shards);
        return Promise.resolve(this.manifest!);
      },
      list: () => {
        this.calls.list++;
        const fault = this.listFault?.() ?? null;
        if (fault !== null) return Promise.reject(fault);
        const now = this.clock.now();
        const view: OwnershipView = {
          manifest: this.manifest ?? { version: SHARD_MANIFEST_VERSION, shards: 1 },
          shards: this.shards
            .slice(0, this.manifest?.shards ?? 1)
            .map((s, index) => ({ index, leased: s.lease?.held() ?? false, owner: s.owner, epoch: s.epoch })),
          members: [...this.members].filter(([, at]) => now - at < MEMBER_LIVE_FOR_MS).map(([id, at]) => ({ id, lastSeen: new Date(at) })),
          serverTime: new Date(now),
        };
        return Promise.resolve(view);
      },
      claim: (shard, owner) => {
        this.calls.claim++;
        const s = this.shards[shard];
        if (s === undefined) return Promise.reject(new JobqError('invalid-argument', `no shard ${shard}`));
        if (s.lease?.held()) return Promise.resolve(null);
        if (this.claimFault?.(shard, owner)) return Promise.resolve(null);
        const lease = new FakeLease(shard, owner, this.nextLease++, this.clock, this.leaseDurationInMs);
        s.lease = lease;
        s.owner = owner;
        s.epoch++;
        mine.add(lease);
        this.claims.push({ shard, owner, epoch: s.epoch, at: this.clock.now() });
        const claim: ShardClaim = { shard, epoch: s.epoch, owner, lease, stopRenewing: () => lease.stopRenewing() };
        return Promise.resolve(claim);
      },
      release: (shard) => {
        this.calls.release++;
        for (const lease of mine) {
          if (lease.shard !== shard) continue;
          mine.delete(lease);
          void lease.release();
        }
        return Promise.resolve();
      },
      breakLease: (shard) => {
        this.shards[shard]?.lease?.lose('broken');
        return Promise.resolve();
      },
      heartbeat: (id) => {
        this.calls.heartbeat++;
        this.members.set(id, this.clock.now());
        return Promise.resolve();
      },
      leave: (id) => {
        this.calls.leave++;
        this.members.delete(id);
        return Promise.resolve();
      },
    };
    // Each call takes its latency, then acts at once; a crashed member's calls never reach the store.
    return new Proxy(store, {
      get: (target, key, receiver) => {
        const value: unknown = Reflect.get(target, key, receiver);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          if (this.latencyInMs !== null) await this.clock.sleep(this.latencyInMs());
          if (this.dead.has(memberId)) throw new JobqError('unavailable', `${memberId} crashed`);
          return (value as (...a: unknown[]) => unknown)(...args);
        };
      },
    });
  }
}

/** A clock whose sleepers never wake once {@link crash} was called: the loops on it stop dead, as in a killed process. */
export function crashableClock(clock: Clock): { clock: Clock; crash(): void } {
  let crashed = false;
  const never = new Promise<void>(() => undefined);
  return {
    clock: {
      now: () => clock.now(),
      sleep: (ms, signal) => (crashed ? never : clock.sleep(ms, signal).then(() => (crashed ? never : undefined))),
    },
    crash: () => {
      crashed = true;
    },
  };
}
