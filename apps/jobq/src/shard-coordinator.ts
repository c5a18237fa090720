import { hostname } from 'node:os';
import { storeNames } from '@jobq/store-azure';
import {
  Coordinator,
  coordinatorRunners,
  type CoordinatorCounters,
  type CoordinatorRunnersInit,
  type ShardBalancer,
  type ShardRunner,
  type ShardRunnerFactory,
} from '@jobq/coordinator';
import {
  isJobqError,
  SHARD_MEMBER_ID_PATTERN,
  shardCompletionQueue,
  type ReceivedMessage,
  type ReceiveOptions,
  type TaskQueue,
} from '@jobq/ports';
import { LIVENESS_STALE_AFTER_IN_MS, type HealthSource } from './health';
import type { Deployment } from './deployment';
import { DeferredQueue, openQueueAt } from './queues';

// The parts of a sharded `workflow coordinator` (docs/sharding.md#running-sharded-coordinators):
// its member id, the shard completion queues its runners receive from, and its health.

/**
 * The member id a coordinator takes without `--member-id`: the host name with every character a
 * member id cannot hold replaced by `-` (in Kubernetes, the pod name). Two coordinators on one host
 * need `--member-id` each.
 */
export function defaultMemberId(host: string = hostname()): string {
  const id = host
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 128);
  return SHARD_MEMBER_ID_PATTERN.test(id) ? id : 'coordinator';
}

/**
 * Shard `shard`'s completion queue as its runner sees it: opened on first use (a failed open is
 * tried again on the next call), and re-created once when a receive finds it missing (`not-found`),
 * logging that once. Any other receive failure is the runner's to handle: it logs, sleeps and keeps
 * its lease.
 */
export class ShardCompletionQueue extends DeferredQueue {
  private recreated = false;

  constructor(
    name: string,
    lockDurationInMs: number,
    open: () => Promise<TaskQueue>,
    private readonly create: (queue: TaskQueue) => Promise<void>,
    private readonly log: (line: string) => void,
  ) {
    super(name, lockDurationInMs, open);
  }

  override async receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const queue = await this.target();
    try {
      return await queue.receive(options);
    } catch (error) {
      if (!isJobqError(error, 'not-found') || this.recreated) throw error;
      this.recreated = true;
      this.log(`completion queue ${this.name} is missing: creating it`);
      await this.create(queue);
      return queue.receive(options);
    }
  }
}

/**
 * Shard `shard`'s completion queue of `deployment` for its runner: the deployment's queue, opened on
 * first use; when a receive finds it missing it is created again (a storage queue by itself, a
 * Service Bus queue through the deployment's settings).
 */
export function shardCompletionQueueOf(
  deployment: Deployment,
  shard: number,
  lockDurationInMs: number,
  log: (line: string) => void,
): ShardCompletionQueue {
  const name = shardCompletionQueue(storeNames(deployment.prefix.prefix).completionQueue, shard);
  return new ShardCompletionQueue(
    name,
    lockDurationInMs,
    () => deployment.shardCompletions(shard),
    async (opened) => {
      const storageQueue = opened as TaskQueue & { ensureExists?: () => Promise<void> };
      if (typeof storageQueue.ensureExists === 'function') await storageQueue.ensureExists();
      else await openQueueAt(deployment.locate(deployment.shardCompletionsSpec(shard)), { lockDurationInMs, createIfMissing: true });
    },
    log,
  );
}

/** The sum of the counters of every runner a sharded coordinator started, and the shards they ran. */
export interface ShardTotals {
  completionsApplied: number;
  pushes: number;
  batches: number;
  shards: number[];
}

/**
 * {@link coordinatorRunners} that also keeps every runner it made, so that the coordinator can sum
 * their counters when it stops.
 */
export function countedRunners(init: CoordinatorRunnersInit): { runners: ShardRunnerFactory; totals: () => ShardTotals } {
  const make = coordinatorRunners(init);
  const made: Array<{ shard: number; counters: CoordinatorCounters }> = [];
  const runners: ShardRunnerFactory = (shard): ShardRunner => {
    const runner = make(shard);
    if (runner instanceof Coordinator) made.push({ shard: shard.index, counters: runner.counters });
    return runner;
  };
  const totals = (): ShardTotals => ({
    completionsApplied: made.reduce((n, r) => n + r.counters.completionsApplied, 0),
    pushes: made.reduce((n, r) => n + r.counters.pushes, 0),
    batches: made.reduce((n, r) => n + r.counters.batches, 0),
    shards: [...new Set(made.map((r) => r.shard))].sort((a, b) => a - b),
  });
  return { runners, totals };
}

/**
 * What a sharded coordinator's /livez and /readyz say (docs/operations.md#health-endpoints): live
 * while its balancing loop goes round, ready unless stopping; `holds` is `shards` (listed in
 * `shards`) or `nothing` (a standby: ready, holding nothing).
 */
export function balancerHealth(
  balancer: Pick<ShardBalancer, 'health'> | null,
  member: { id: string; shardCount: number },
  now: () => number = Date.now,
): HealthSource {
  const state = (): Record<string, unknown> & { phase: string; ok: boolean } => {
    if (balancer === null) return { ok: false, phase: 'starting', holds: 'nothing', shards: [] };
    const h = balancer.health();
    return {
      ok: true,
      phase: h.phase,
      holds: h.shards.length > 0 ? 'shards' : 'nothing',
      shards: h.shards,
      last_tick_ms_ago: Math.max(0, now() - h.lastTickAt),
    };
  };
  const details = (s: Record<string, unknown>): Record<string, unknown> => {
    const { ok: _ok, ...rest } = s;
    return { role: 'coordinator', member_id: member.id, shard_count: member.shardCount, ...rest };
  };
  return {
    live() {
      const s = state();
      const stale = typeof s.last_tick_ms_ago === 'number' && s.last_tick_ms_ago > LIVENESS_STALE_AFTER_IN_MS;
      return { ok: s.phase === 'starting' || s.phase === 'stopping' || s.phase === 'stopped' || !stale, details: details(s) };
    },
    ready() {
      const s = state();
      return { ok: s.phase === 'running' || s.phase === 'standby', details: details(s) };
    },
  };
}
