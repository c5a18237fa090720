import { shardOf } from '@jobq/dag-core';
import { realClock, type Clock } from './clock';
import type { OwnershipStore, ShardCount } from './ownership';
import type { TaskQueue } from './task-queue';
import { errorMessage } from './text';

/**
 * Routing of completions and wake-ups by shard (docs/sharding.md#routing): a workflow's messages go
 * to its shard's completion queue, `shardOf(workflowId, n)` for the deployment's n shards.
 */

/** Where a workflow's completions and wake-ups go. */
export interface CompletionRoute {
  /** The completion queue of `workflowId`'s shard. */
  queueFor(workflowId: string): Promise<TaskQueue>;
}

/** How often a {@link ShardRouter} reads the manifest again: 60 s. */
export const SHARD_MANIFEST_REFRESH_INTERVAL_IN_MS = 60_000;

/** Options of {@link ShardRouter}. */
export interface ShardRouterOptions {
  /** Reads the manifest (an {@link OwnershipStore}). */
  manifest: Pick<OwnershipStore, 'readManifestIfChanged'>;
  /**
   * Shard k's completion queue: `{p}-workflow-completions` for shard 0, `{p}-workflow-completions-{k}`
   * for k ≥ 1 (`shardCompletionQueue`). Called at each send: the caller opens each queue once and keeps it.
   */
  queueOf: (shard: number) => TaskQueue | Promise<TaskQueue>;
  /** The clock of the refreshes (default the real one). */
  clock?: Clock;
  /** Time between manifest reads (default {@link SHARD_MANIFEST_REFRESH_INTERVAL_IN_MS}). */
  refreshIntervalInMs?: number;
  /** Where the router says what it could not do (a failed read, once until a read succeeds again) and a later change of shard count. */
  log?: (line: string) => void;
}

/**
 * A {@link CompletionRoute} that follows the shard manifest: read at the first use (or
 * {@link refresh}) and again once {@link ShardRouterOptions.refreshIntervalInMs} has passed since
 * the last read, conditionally (If-None-Match its ETag). A read that fails keeps the manifest it
 * had (one shard before any) and is logged once until a read succeeds again. A deployment without
 * a manifest routes everything to shard 0's queue, `{p}-workflow-completions`, as before shards.
 * Shard 0 is always a safe place: its runner forwards other shards' messages. So a shard queue that
 * cannot be opened is logged and shard 0's used instead.
 */
export class ShardRouter implements CompletionRoute {
  private readonly clock: Clock;
  private readonly intervalInMs: number;
  private readonly log: (line: string) => void;
  private shards: ShardCount = 1;
  private etag: string | null = null;
  private nextReadAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;
  private failing = false;
  private readOnce = false;
  private readonly unopenable = new Set<number>();

  constructor(private readonly options: ShardRouterOptions) {
    this.clock = options.clock ?? realClock;
    this.intervalInMs = options.refreshIntervalInMs ?? SHARD_MANIFEST_REFRESH_INTERVAL_IN_MS;
    this.log = options.log ?? (() => undefined);
  }

  /** The shard count messages are routed by now (1 until a manifest with more was read). */
  get shardCount(): ShardCount {
    return this.shards;
  }

  /** Reads the manifest now (a read in progress is shared); never rejects (a failure keeps the last manifest). */
  refresh(): Promise<void> {
    this.reading ??= this.read().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  async queueFor(workflowId: string): Promise<TaskQueue> {
    if (this.clock.now() >= this.nextReadAt) await this.refresh();
    const shard = this.shards === 1 ? 0 : shardOf(workflowId, this.shards);
    if (shard === 0) return this.options.queueOf(0);
    try {
      const queue = await this.options.queueOf(shard);
      this.unopenable.delete(shard);
      return queue;
    } catch (error) {
      if (!this.unopenable.has(shard)) {
        this.unopenable.add(shard);
        this.log(`shard ${shard}'s completion queue could not be opened (${errorMessage(error)}); sending to shard 0's, which forwards`);
      }
      return this.options.queueOf(0);
    }
  }

  private async read(): Promise<void> {
    this.nextReadAt = this.clock.now() + this.intervalInMs;
    let read: Awaited<ReturnType<OwnershipStore['readManifestIfChanged']>>;
    try {
      read = await this.options.manifest.readManifestIfChanged(this.etag);
    } catch (error) {
      if (!this.failing) {
        this.failing = true;
        this.log(
          `reading the shard manifest failed (${errorMessage(error)}); routing by ${this.shards} shard(s) until a read succeeds (tried every ${this.intervalInMs} ms)`,
        );
      }
      return;
    }
    if (this.failing) {
      this.failing = false;
      this.log('the shard manifest can be read again');
    }
    if (read === 'unchanged') {
      this.readOnce = true;
      return;
    }
    const shards = read?.manifest.shards ?? 1;
    this.etag = read?.etag ?? null;
    // A change is said; the first read is not (a one-shot command would print it at every send).
    if (shards !== this.shards && this.readOnce) this.log(`routing completions by ${shards} shard(s) (was ${this.shards})`);
    this.shards = shards;
    this.readOnce = true;
  }
}
