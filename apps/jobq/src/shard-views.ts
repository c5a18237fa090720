import { JobqError, isJobqError, type CoordinatorStats, type OwnershipView, type ShardManifest } from '@jobq/ports';
import { errorLine } from './base';
import type { Deployment } from './deployment';

/**
 * What `jobq workflow shards`, `doctor` and `explain` read of a deployment's shards
 * (docs/sharding.md#inspecting-shards): the manifest, each shard's lease, owner and epoch, its
 * completion queue and its stats document, and the live members. Nothing is created or changed.
 */

/** A shard lease lasts this long after its last renewal (docs/sharding.md#ownership). */
export const SHARD_LEASE_MS = 60_000;
/** The balancer's default interval: a free shard is claimed within one (docs/sharding.md#balancing). */
export const BALANCE_INTERVAL_MS = 10_000;
/** A shard runner writes its stats document this often (and when it starts and stops). */
export const SHARD_STATS_INTERVAL_MS = 10_000;
/**
 * A free shard whose last owner last showed life (its claim, or its last stats write) longer ago
 * than this has been without an owner for more than lease + balance interval: the owner's lease ran
 * out at the latest a lease after its last stats write (plus one stats period), and a live member
 * claims a free shard within one balance interval.
 */
export const OWNERLESS_AFTER_MS = SHARD_STATS_INTERVAL_MS + SHARD_LEASE_MS + BALANCE_INTERVAL_MS;
/** More than this share of a shard's messages forwarded to other shards is worth a warning. */
export const FORWARDED_WARN_SHARE = 0.01;

/** A shard's completion queue as read: its approximate length, or why there is none. */
export interface ShardQueueView {
  /** The queue's name (`{p}-workflow-completions`, `{p}-workflow-completions-{k}`). */
  name: string;
  /** As a queue spec (`ACCOUNT/NAME` or `sb://NAMESPACE/NAME`). */
  spec: string;
  state: 'ok' | 'missing' | 'unreachable';
  /** Approximate message count; null unless `state` is `ok`. */
  messages: number | null;
  /** One line, when unreachable. */
  error: string | null;
}

/** The counters of a shard's stats document (docs/sharding.md#shard-runners); absent counters read 0. */
export interface ShardStatsView {
  /** When its runner wrote it, by the runner's clock; null when the document has no time. */
  writtenAt: string | null;
  /** Milliseconds since `writtenAt` by this process's clock; null without a time. */
  ageMs: number | null;
  startedAt: string | null;
  messages: number;
  completionsApplied: number;
  /** Messages for other shards it sent on (a counter older runners do not write: 0). */
  forwarded: number;
  poison: number;
  receiveErrors: number;
  /** The shard count its runner worked for; null when written by a coordinator without shards. */
  shards: number | null;
  owner: string | null;
  epoch: number | null;
}

/** One shard: its ownership, queue and stats. */
export interface ShardView {
  index: number;
  leased: boolean;
  /** The member that last claimed it (it holds it only while `leased`); null when no claim recorded one. */
  owner: string | null;
  epoch: number;
  /** When it was last claimed, by the storage clock; null when never. */
  claimedAt: Date | null;
  /**
   * Shard 0 held by a coordinator that knows nothing of shards: its lease is held while no claim
   * recorded an owner, or while the stats document, written after the last claim, has no shard count.
   */
  unshardedHolder: boolean;
  /** Milliseconds since its last owner last showed life (claim or stats write); null when never owned. */
  lastSignAgeMs: number | null;
  queue: ShardQueueView | null;
  stats: ShardStatsView | null;
  /** One line when the stats document could not be read. */
  statsError: string | null;
}

/** A live member (coordinator) and the shards it holds. */
export interface MemberView {
  id: string;
  lastSeen: Date;
  /** Milliseconds since its last heartbeat, by the storage clock. */
  ageMs: number;
  /** Shards whose lease is held and whose recorded owner is this member. */
  held: number[];
}

export interface ShardsReport {
  /** Null: no manifest, one shard. */
  manifest: ShardManifest | null;
  count: number;
  /** The storage service's time of the read. */
  serverTime: Date;
  shards: ShardView[];
  members: MemberView[];
}

export interface ReadShardsOptions {
  /** Read each shard's completion queue length (default true). */
  queues?: boolean;
  /** Read each shard's stats document (default true). */
  stats?: boolean;
  /** Only this shard's queue and stats (the others' ownership is read all the same). */
  only?: number;
  /** This process's time, for stats ages (default now). */
  now?: number;
}

function numberOf(stats: CoordinatorStats, key: string): number {
  const value = stats[key];
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

function textOf(stats: CoordinatorStats, key: string): string | null {
  const value = stats[key];
  return typeof value === 'string' ? value : null;
}

/** The counters of a stats document. */
export function shardStatsView(stats: CoordinatorStats, now: number): ShardStatsView {
  const writtenAt = textOf(stats, 'writtenAt');
  const at = writtenAt === null ? Number.NaN : Date.parse(writtenAt);
  const shards = stats.shards;
  const epoch = stats.epoch;
  return {
    writtenAt,
    ageMs: Number.isFinite(at) ? Math.max(0, now - at) : null,
    startedAt: textOf(stats, 'startedAt'),
    messages: numberOf(stats, 'messages'),
    completionsApplied: numberOf(stats, 'completionsApplied'),
    forwarded: numberOf(stats, 'forwarded'),
    poison: numberOf(stats, 'poison'),
    receiveErrors: numberOf(stats, 'receiveErrors'),
    shards: typeof shards === 'number' && Number.isSafeInteger(shards) ? shards : null,
    owner: textOf(stats, 'owner'),
    epoch: typeof epoch === 'number' && Number.isSafeInteger(epoch) ? epoch : null,
  };
}

/** The name part of a queue spec (`ACCOUNT/NAME`, `sb://NAMESPACE/NAME`). */
function queueNameOf(spec: string): string {
  return spec.slice(spec.lastIndexOf('/') + 1);
}

async function readQueue(deployment: Deployment, shard: number): Promise<ShardQueueView> {
  const spec = deployment.shardCompletionsSpec(shard);
  const name = queueNameOf(spec);
  try {
    // The deployment is opened with createIfMissing false: a missing queue stays missing.
    const queue = await deployment.shardCompletions(shard);
    const messages = await queue.approximateMessageCount();
    return { name: queue.name, spec, state: 'ok', messages, error: null };
  } catch (error) {
    if (isJobqError(error, 'not-found')) return { name, spec, state: 'missing', messages: null, error: null };
    return { name, spec, state: 'unreachable', messages: null, error: errorLine(error) };
  }
}

/**
 * Shard 0's holder knows nothing of shards: the lease is held and no claim recorded an owner, or
 * its stats document has no shard count and was written after the last claim (a runner writes its
 * stats as soon as it starts, so a sharded holder's document follows its claim).
 */
function heldUnsharded(
  index: number,
  leased: boolean,
  owner: string | null,
  claimedAt: Date | null,
  stats: ShardStatsView | null,
): boolean {
  if (index !== 0 || !leased) return false;
  if (owner === null) return true;
  if (stats === null || stats.shards !== null || stats.writtenAt === null) return false;
  return claimedAt === null || Date.parse(stats.writtenAt) > claimedAt.getTime();
}

/**
 * Reads the shards of a deployment opened with `createIfMissing: false`. `unsupported` for a
 * manifest of an unknown version; `not-found` when the prefix has no storage.
 */
export async function readShards(deployment: Deployment, options: ReadShardsOptions = {}): Promise<ShardsReport> {
  const now = options.now ?? Date.now();
  const ownership = await deployment.ownership();
  const stored = await ownership.readManifest();
  let view: OwnershipView;
  try {
    view = await ownership.list({ claimTimes: true });
  } catch (error) {
    if (isJobqError(error, 'not-found')) {
      throw new JobqError('not-found', `${deployment.target} has no workflows container: nothing was ever submitted to this prefix`);
    }
    throw error;
  }
  const manifest = stored === null && view.manifest.shards === 1 ? null : view.manifest;
  const wanted = (k: number): boolean => options.only === undefined || options.only === k;
  const shards = await Promise.all(
    view.shards.map(async (s): Promise<ShardView> => {
      const [queue, read] = await Promise.all([
        options.queues !== false && wanted(s.index) ? readQueue(deployment, s.index) : Promise.resolve(null),
        options.stats !== false && wanted(s.index)
          ? deployment.store.readCoordinatorStats({ shard: s.index }).then(
              (doc) => ({ stats: doc === null ? null : shardStatsView(doc, now), error: null }),
              (error: unknown) => ({ stats: null, error: errorLine(error) }),
            )
          : Promise.resolve({ stats: null, error: null }),
      ]);
      const claimedAt = s.claimedAt ?? null;
      const claimAge = claimedAt === null ? null : Math.max(0, view.serverTime.getTime() - claimedAt.getTime());
      const statsAge = read.stats?.ageMs ?? null;
      const ages = [claimAge, statsAge].filter((a): a is number => a !== null);
      return {
        index: s.index,
        leased: s.leased,
        owner: s.owner,
        epoch: s.epoch,
        claimedAt,
        unshardedHolder: heldUnsharded(s.index, s.leased, s.owner, claimedAt, read.stats),
        lastSignAgeMs: ages.length === 0 ? null : Math.min(...ages),
        queue,
        stats: read.stats,
        statsError: read.error,
      };
    }),
  );
  const members = view.members.map((m) => ({
    id: m.id,
    lastSeen: m.lastSeen,
    ageMs: Math.max(0, view.serverTime.getTime() - m.lastSeen.getTime()),
    held: shards.filter((s) => s.leased && !s.unshardedHolder && s.owner === m.id).map((s) => s.index),
  }));
  return { manifest, count: view.manifest.shards, serverTime: view.serverTime, shards, members };
}

/** `owned by coord-b (epoch 7)`, `held by a coordinator without shards`, `no owner` or `no owner (last: coord-b, epoch 7)`. */
export function holderText(shard: Pick<ShardView, 'leased' | 'owner' | 'epoch' | 'unshardedHolder'>): string {
  if (shard.unshardedHolder) return 'held by a coordinator without shards';
  if (shard.leased) return `owned by ${shard.owner ?? '?'} (epoch ${shard.epoch})`;
  return shard.owner === null ? 'no owner' : `no owner (last: ${shard.owner}, epoch ${shard.epoch})`;
}

/** The share of a shard's messages it forwarded; null when it received none. */
export function forwardedShare(stats: ShardStatsView): number | null {
  const of = Math.max(stats.messages, stats.forwarded);
  return of === 0 ? null : stats.forwarded / of;
}
