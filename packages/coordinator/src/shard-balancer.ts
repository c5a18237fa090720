import {
  isJobqError,
  realClock,
  type Clock,
  type OwnershipStore,
  type ShardClaim,
  type ShardCount,
  type ShardManifest,
  type TaskQueue,
} from '@jobq/ports';
import { Coordinator, type CoordinatorInit, type CoordinatorShard } from './coordinator';
import { planShards } from './shard-plan';

/**
 * What the {@link ShardBalancer} runs on each shard it holds: a {@link Coordinator} bound to the
 * shard (see {@link coordinatorRunners}); tests hand in lighter ones.
 */
export interface ShardRunner {
  /** Starts working the shard under the claim's lease. */
  start(): Promise<unknown>;
  /** Resolves when the runner has stopped; rejects when it stopped by itself (its lease was lost). */
  run(): Promise<void>;
  /** Finishes the current batch, writes its stats, releases the lease. Harmless when called twice. */
  stop(): Promise<void>;
  /** When its loop last went round (clock ms): a runner silent for half a lease is stalled. */
  health(): { lastTickAt: number };
}

/** Makes the runner of a shard just claimed. */
export type ShardRunnerFactory = (shard: CoordinatorShard) => ShardRunner;

/** Tunables of the {@link ShardBalancer} (docs/sharding.md#balancing). */
export interface ShardBalancerOptions {
  /** Time between balancing rounds (default 10 000 ms), each one ±`jitter` of it at random. */
  balanceIntervalInMs?: number;
  /** The spread of the interval, a fraction of it (default 0.2: ±20 %). */
  jitter?: number;
  /** Uniform in [0, 1) (default `Math.random`): the jitter; tests hand in a seeded one. */
  random?: () => number;
  /** The time of the rounds and of the stall check (default the real clock; the runners' clock too). */
  clock?: Clock;
  /**
   * A runner whose loop has not gone round for this long is stalled (default 30 000 ms, half a
   * 60 s lease): its lease stops being renewed, so it runs out and another member takes the shard.
   */
  stallAfterInMs?: number;
  /** A shard this member released is not claimed again by it for this many rounds (default 3). */
  releaseCooldownRounds?: number;
  /** Log lines (default stderr). */
  log?: (line: string) => void;
}

/** Resolved {@link ShardBalancerOptions}. */
export const SHARD_BALANCER_DEFAULTS = {
  balanceIntervalInMs: 10_000,
  jitter: 0.2,
  stallAfterInMs: 30_000,
  releaseCooldownRounds: 3,
} as const;

/** What the {@link ShardBalancer} is built from. */
export interface ShardBalancerInit {
  ownership: OwnershipStore;
  /** This coordinator's member id (stable over restarts is best: it takes its old shards back first). */
  memberId: string;
  runners: ShardRunnerFactory;
  options?: ShardBalancerOptions;
}

/** Where a {@link ShardBalancer} is: a standby holds no shard. */
export type ShardBalancerPhase = 'starting' | 'standby' | 'running' | 'stopping' | 'stopped';

interface Held {
  readonly claim: ShardClaim;
  readonly runner: ShardRunner;
  /** Set once the runner's `run()` settled (it stopped, or lost its lease). */
  ended: boolean;
  /** Set once it was found stalled and its lease left to run out. */
  stalled: boolean;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The balancing loop of a sharded coordinator (docs/sharding.md#balancing): every
 * `balanceIntervalInMs` (±20 %) it heartbeats, lists the shards and members, asks
 * {@link planShards} what to claim and release, claims (starting a runner on each shard taken) and
 * releases (stopping that shard's runner first: its batch finished, its stats written). It never
 * breaks a lease. A manifest that changed releases every shard, then balances again; `stop()`
 * releases every shard and leaves. Holding no shard, it is a standby.
 */
export class ShardBalancer {
  private readonly ownership: OwnershipStore;
  private readonly memberId: string;
  private readonly runners: ShardRunnerFactory;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: (line: string) => void;
  private readonly settings: { balanceIntervalInMs: number; jitter: number; stallAfterInMs: number; releaseCooldownRounds: number };
  private readonly running = new Map<number, Held>();
  /** Shards this member released, with the round it released them in. */
  private readonly released = new Map<number, number>();
  /** Shards whose runner stalled here, with the round their lease was found lost: not claimed again by this member for the cooldown, whoever else is short. */
  private readonly stalledShards = new Map<number, number>();
  private readonly stopping = new AbortController();
  private manifest: ShardManifest | null = null;
  private round = 0;
  private loop: Promise<void> | null = null;
  private stopped: Promise<void> | null = null;
  private phase: ShardBalancerPhase = 'starting';
  private lastTickAt: number;
  /** What ended the loop for good (a manifest this version cannot read), rethrown by `run()`. */
  private fatal: Error | null = null;

  constructor(init: ShardBalancerInit) {
    const o = init.options ?? {};
    this.ownership = init.ownership;
    this.memberId = init.memberId;
    this.runners = init.runners;
    this.clock = o.clock ?? realClock;
    this.random = o.random ?? Math.random;
    this.log = o.log ?? ((line) => process.stderr.write(`coordinator: ${line}\n`));
    this.settings = {
      balanceIntervalInMs: Math.max(1, o.balanceIntervalInMs ?? SHARD_BALANCER_DEFAULTS.balanceIntervalInMs),
      jitter: Math.min(1, Math.max(0, o.jitter ?? SHARD_BALANCER_DEFAULTS.jitter)),
      stallAfterInMs: Math.max(1, o.stallAfterInMs ?? SHARD_BALANCER_DEFAULTS.stallAfterInMs),
      releaseCooldownRounds: Math.max(0, Math.floor(o.releaseCooldownRounds ?? SHARD_BALANCER_DEFAULTS.releaseCooldownRounds)),
    };
    this.lastTickAt = this.clock.now();
  }

  /** The shards this member runs now, ascending. */
  held(): number[] {
    return [...this.running.keys()].sort((a, b) => a - b);
  }

  /** The state the health endpoints report. */
  health(): { phase: ShardBalancerPhase; shards: number[]; lastTickAt: number } {
    return { phase: this.phase, shards: this.held(), lastTickAt: this.lastTickAt };
  }

  /** Starts the loop in the background (the first round at once). */
  start(): void {
    if (this.loop !== null) throw new Error('ShardBalancer.start() was already called; make a new ShardBalancer');
    this.loop = this.mainLoop();
  }

  /**
   * {@link start}, then waits until stopped. Rejects (after releasing everything) with the
   * `unsupported` error of a shard manifest whose version this jobq cannot read.
   */
  async run(): Promise<void> {
    if (this.loop === null) this.start();
    await this.loop;
    if (this.fatal !== null) await this.stop();
    if (this.stopped) await this.stopped;
    if (this.fatal !== null) throw this.fatal;
  }

  /** Ends the loop, stops every runner (each finishes its batch, writes its stats, releases its lease) and leaves. Harmless when called twice. */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    this.phase = 'stopping';
    this.stopping.abort('stop');
    if (this.loop) await this.loop;
    await this.releaseAll('stopping');
    try {
      await this.ownership.leave(this.memberId);
    } catch (error) {
      this.log(`leaving the shard members failed: ${errorText(error)}`);
    }
    this.phase = 'stopped';
  }

  private async mainLoop(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      try {
        await this.step();
      } catch (error) {
        if (isJobqError(error, 'unsupported')) {
          // A manifest written by a newer jobq: its shards cannot be known, so none is worked.
          this.log(`stopping: ${errorText(error)}`);
          this.fatal = error;
          break;
        }
        this.log(`balancing round failed: ${errorText(error)}`);
      }
      if (this.stopping.signal.aborted) break;
      const { balanceIntervalInMs: interval, jitter } = this.settings;
      await this.clock.sleep(interval * (1 + jitter * (2 * this.random() - 1)), this.stopping.signal);
    }
  }

  /** One balancing round (the loop calls it every interval; tests may call it directly). */
  async step(): Promise<void> {
    this.round++;
    this.lastTickAt = this.clock.now();
    this.reap();
    this.checkStalls();
    await this.ownership.heartbeat(this.memberId);
    let view = await this.ownership.list();
    if (this.manifest !== null && view.manifest.shards !== this.manifest.shards) {
      this.log(
        `the shard manifest changed (${this.manifest.shards} → ${view.manifest.shards} shards): releasing every shard, then balancing again`,
      );
      await this.releaseAll('the manifest changed');
      this.released.clear();
      view = await this.ownership.list();
    }
    this.manifest = view.manifest;
    const cooldown = this.settings.releaseCooldownRounds;
    for (const [shard, round] of this.released) if (this.round - round > cooldown) this.released.delete(shard);
    for (const [shard, round] of this.stalledShards) if (this.round - round > cooldown) this.stalledShards.delete(shard);
    const plan = planShards(view, this.memberId, new Set(this.released.keys()));
    if (plan.release !== null && !this.stopping.signal.aborted) {
      this.log(`releasing shard ${plan.release} (holding ${plan.held}, share ${plan.share}): a member is below its share`);
      await this.releaseOne(plan.release);
      this.released.set(plan.release, this.round);
    }
    for (const shard of plan.claim) {
      if (this.stopping.signal.aborted) break;
      if (this.stalledShards.has(shard)) continue;
      await this.claimOne(shard, view.manifest.shards);
    }
    if (!this.stopping.signal.aborted) this.phase = this.running.size > 0 ? 'running' : 'standby';
  }

  /** Forgets the runners that ended by themselves (a lost lease). */
  private reap(): void {
    for (const [shard, held] of this.running) {
      if (!held.ended && !held.claim.lease.lost.aborted) continue;
      this.running.delete(shard);
      // A stalled runner's shard is left to the others for a while once its lease ran out.
      if (held.stalled) this.stalledShards.set(shard, this.round);
      // The lease may still be held (a runner that failed): give it up.
      void held.claim.lease.release().catch(() => undefined);
      this.log(`shard ${shard}: its runner stopped${held.claim.lease.lost.aborted ? ' (lease lost)' : ''}`);
    }
  }

  /**
   * A runner silent for `stallAfterInMs` stops having its lease renewed: it runs out, the runner
   * halts (its writes fail from then on; the claim fires `lost` once the lease can have run out),
   * and the shard goes to whoever claims it after the expiry.
   */
  private checkStalls(): void {
    const now = this.clock.now();
    for (const [shard, held] of this.running) {
      if (held.stalled || held.ended) continue;
      const silentFor = now - held.runner.health().lastTickAt;
      if (silentFor < this.settings.stallAfterInMs) continue;
      held.stalled = true;
      this.log(`shard ${shard}: its runner has not gone round for ${silentFor} ms: no longer renewing its lease`);
      held.claim.stopRenewing();
    }
  }

  private async claimOne(shard: number, count: ShardCount): Promise<void> {
    let claim: ShardClaim | null;
    try {
      claim = await this.ownership.claim(shard, this.memberId);
    } catch (error) {
      this.log(`claiming shard ${shard} failed: ${errorText(error)}`);
      return;
    }
    if (claim === null) return; // another member won the race
    let runner: ShardRunner;
    try {
      runner = this.runners({ index: shard, count, claim });
      await runner.start();
    } catch (error) {
      this.log(`shard ${shard}: its runner did not start: ${errorText(error)}; released`);
      await claim.lease.release().catch(() => undefined);
      return;
    }
    const held: Held = { claim, runner, ended: false, stalled: false };
    this.running.set(shard, held);
    this.log(`shard ${shard}: claimed (epoch ${claim.epoch})`);
    runner.run().then(
      () => {
        held.ended = true;
      },
      (error: unknown) => {
        held.ended = true;
        if (!isJobqError(error, 'lease-lost')) this.log(`shard ${shard}: its runner failed: ${errorText(error)}`);
      },
    );
  }

  private async releaseOne(shard: number): Promise<void> {
    const held = this.running.get(shard);
    this.running.delete(shard);
    if (held?.stalled) {
      // Its stop would wait for a loop that does not go round, and a release would let another
      // member in while it may still write: its lease runs out instead, which halts it.
      void held.runner.stop().catch(() => undefined);
      this.log(`shard ${shard}: its runner is stalled: left to its lease's expiry`);
      return;
    }
    if (held !== undefined) {
      try {
        await held.runner.stop();
      } catch (error) {
        this.log(`shard ${shard}: stopping its runner failed: ${errorText(error)}`);
      }
      await held.claim.lease.release().catch(() => undefined);
    }
    try {
      await this.ownership.release(shard);
    } catch (error) {
      this.log(`releasing shard ${shard} failed: ${errorText(error)}`);
    }
  }

  private async releaseAll(why: string): Promise<void> {
    const shards = this.held();
    if (shards.length > 0) this.log(`${why}: releasing shard(s) ${shards.join(', ')}`);
    await Promise.all(shards.map((shard) => this.releaseOne(shard)));
  }
}

/** What {@link coordinatorRunners} builds each shard's {@link Coordinator} from. */
export interface CoordinatorRunnersInit extends Omit<CoordinatorInit, 'completions' | 'shard'> {
  /** The completion queue of a shard (`{p}-workflow-completions` for shard 0, `…-{k}` for shard k ≥ 1). */
  completions: (shard: number) => TaskQueue;
  /**
   * Where a runner forwards another shard's message (`CoordinatorShard.queueOf`,
   * docs/sharding.md#routing). Default `completions`.
   */
  queueOf?: (shard: number) => TaskQueue | Promise<TaskQueue>;
}

/**
 * The runner factory of a sharded coordinator: each shard claimed gets a new {@link Coordinator}
 * bound to it (its own lease, queue, cache and stats), logging with the shard's number.
 */
export function coordinatorRunners(init: CoordinatorRunnersInit): ShardRunnerFactory {
  return (shard) => {
    const log = init.options?.log ?? ((line: string) => process.stderr.write(`coordinator: ${line}\n`));
    const { queueOf = init.completions, ...rest } = init;
    return new Coordinator({
      ...rest,
      completions: init.completions(shard.index),
      shard: { ...shard, queueOf: shard.queueOf ?? queueOf },
      options: { ...init.options, log: (line) => log(`shard ${shard.index}: ${line}`) },
    });
  };
}
