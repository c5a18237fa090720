import { isNewer } from '@jobq/dag-core';
import { errorMessage, type WorkflowStore } from '@jobq/ports';

/** Options of {@link CancelFlagCache}. */
export interface CancelFlagCacheOptions {
  /** How long a looked-up flag is kept (`JOBQ_CANCEL_POLL_INTERVAL`, docs/design.md#cancellation-on-the-worker). Default 30 s. */
  ttlInMs?: number;
  /** Relative spread of the time-to-live, ±: 0.25 keeps an entry 75 %–125 % of `ttlInMs`. Default 0.25. */
  jitter?: number;
  /** Source of randomness in [0, 1) for the jitter. Default `Math.random`. */
  random?: () => number;
  /** Clock, for tests. Default `Date.now`. */
  now?: () => number;
  /** Where a failed look-up is reported (it then counts as "not cancelled"). */
  log?: (line: string) => void;
}

interface Entry {
  cancelled: boolean;
  expiresAt: number;
}

/** Default of `JOBQ_CANCEL_POLL_INTERVAL`: 30 s. */
export const DEFAULT_CANCEL_POLL_INTERVAL_IN_MS = 30_000;

/** `base` spread by ±`jitter` (a fraction), with `random()` in [0, 1). Never below 1 ms. */
export function jittered(base: number, jitter: number, random: () => number = Math.random): number {
  const factor = 1 + jitter * (2 * random() - 1);
  return Math.max(1, Math.round(base * factor));
}

/**
 * Caches each workflow's cancel flag (docs/design.md#cancellation-on-the-worker). Only "not cancelled" is served from the cache: a
 * "cancelled" answer is asked again every time, because a retry may have lifted it since, and a
 * stale answer would refuse or kill the retried task (it costs one index read per task of a
 * cancelled workflow). Concurrent look-ups of one workflow share one call of `check`. A look-up
 * that fails counts as "not cancelled" (and is logged, and not cached) so a transient storage error
 * never stops work.
 */
export class CancelFlagCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<boolean>>();
  private readonly ttlInMs: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly log: (line: string) => void;

  constructor(
    private readonly check: (workflowId: string) => Promise<boolean>,
    options: CancelFlagCacheOptions = {},
  ) {
    this.ttlInMs = options.ttlInMs ?? DEFAULT_CANCEL_POLL_INTERVAL_IN_MS;
    this.jitter = options.jitter ?? 0.25;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? (() => undefined);
    if (!(this.ttlInMs >= 0) || !(this.jitter >= 0 && this.jitter < 1)) {
      throw new RangeError(`CancelFlagCache: ttlInMs must be ≥ 0 and jitter in [0, 1), got ${this.ttlInMs} and ${this.jitter}`);
    }
  }

  /** True when the workflow counts as cancelled, from the cache while the entry is fresh. */
  isCancelled(workflowId: string): Promise<boolean> {
    const entry = this.entries.get(workflowId);
    if (entry && !entry.cancelled && entry.expiresAt > this.now()) return Promise.resolve(false);
    const pending = this.inFlight.get(workflowId);
    if (pending) return pending;
    const lookup = this.lookUp(workflowId).finally(() => this.inFlight.delete(workflowId));
    this.inFlight.set(workflowId, lookup);
    return lookup;
  }

  /** Forgets one workflow's flag (or all), so the next look-up asks again. */
  invalidate(workflowId?: string): void {
    if (workflowId === undefined) this.entries.clear();
    else this.entries.delete(workflowId);
  }

  private async lookUp(workflowId: string): Promise<boolean> {
    let cancelled: boolean;
    try {
      cancelled = await this.check(workflowId);
    } catch (error) {
      this.log(`could not read the cancel flag of workflow "${workflowId}" (treated as not cancelled): ${errorMessage(error)}`);
      return false;
    }
    this.entries.set(workflowId, { cancelled, expiresAt: this.now() + jittered(this.ttlInMs, this.jitter, this.random) });
    return cancelled;
  }
}

/**
 * A cancel check over the workflow index (docs/design.md#cancel-and-retry-requests): cancelled when `cancelRequestedAt` is set and
 * newer than `retryRequestedAt` (or there is no retry request). An unknown workflow is not cancelled.
 */
export function cancelCheckFromStore(store: Pick<WorkflowStore, 'getWorkflow'>): (workflowId: string) => Promise<boolean> {
  return async (workflowId) => {
    const summary = await store.getWorkflow(workflowId);
    if (!summary) return false;
    return isCancelRequested(summary.cancelRequestedAt, summary.retryRequestedAt);
  };
}

/** docs/design.md#cancel-and-retry-requests: a cancel request counts when it is newer than the last retry request (or there is none). */
export function isCancelRequested(cancelRequestedAt: string | null, retryRequestedAt: string | null): boolean {
  return isNewer(cancelRequestedAt, retryRequestedAt);
}

/** Whether a workflow has an index row in this store: the `isKnownWorkflow` check of the workflow processor. */
export function workflowExistsInStore(store: Pick<WorkflowStore, 'getWorkflow'>): (workflowId: string) => Promise<boolean> {
  return async (workflowId) => (await store.getWorkflow(workflowId)) !== null;
}
