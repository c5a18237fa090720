import {
  DEFAULT_LOST_TASK_GRACE_MS,
  DEFAULT_TASK_MESSAGE_TTL_MS,
  changedTasks,
  deadlinePassed,
  isNewer as newer,
  isTerminalWorkflowStatus,
  reduce,
  shardOf,
  type WorkflowEvent,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { completionMessageId, decodeCoordinatorMessage, decodeEnvelope } from '@jobq/dag-core/wire';
import {
  isJobqError,
  JobqError,
  MAX_QUEUE_LABEL_VALUES,
  noopInstruments,
  realClock,
  type Clock,
  type Instruments,
  type CoordinatorLease,
  type LoadedRuntime,
  type OutputStore,
  type ReceivedMessage,
  type RerunRequest,
  type ShardClaim,
  type ShardCount,
  type ShardFilter,
  type TaskQueue,
  type WorkflowFilter,
  type WorkflowRequest,
  type WorkflowStore,
  type WorkflowSummary,
  type WorkerRegistry,
} from '@jobq/ports';
import {
  applyEvents,
  RuntimeCache,
  saveRuntime,
  type ApplyContext,
  type ApplyOutcome,
  type EventOutcome,
  type QueueResolver,
} from './effects';
import { Limit } from './limit';
import { WorkflowPipeline } from './pipeline';
import { purgeWorkflow } from './purge';
import { RERUN_WAKEUP_SUFFIX } from './rerun-request';
import { TaskRowWriter } from './task-rows';
import { describeError, endSpan, remoteSpanContext, startProcessSpan } from '@jobq/ports';
import type { Span } from '@opentelemetry/api';

/** Tunables of the {@link Coordinator} (docs/design.md#the-coordinator; defaults there). */
export interface CoordinatorOptions {
  /** Completion messages per receive (default 32; Storage Queue max 32). */
  batchSize?: number;
  /** How long one receive waits for a first message (default 1 000 ms). */
  receiveWaitInMs?: number;
  /**
   * Under load (the last batch held at least `batchFillMinMessages` messages but was not full), the
   * next receive waits until this long after the last one, so completions gather into fewer, larger
   * batches: fewer runtime saves and storage transactions per completion, at most this much added
   * latency (default 50 ms; 0 = off).
   */
  batchFillWaitInMs?: number;
  /**
   * The smallest batch after which the next receive waits `batchFillWaitInMs` (default 2). A smaller
   * batch means completions trickle in one at a time (a chain of tasks): waiting would gather
   * nothing and only delay the next task, so the next receive goes out at once.
   */
  batchFillMinMessages?: number;
  /**
   * Completion batches received and folded at once (default 8): the next batch is received, folded
   * and its task messages pushed while earlier ones are being saved; a workflow's batches are folded
   * and saved in the order received (docs/failure-model.md, "Pipelining"). Batches past their fold
   * that wait for their save count against 8 × this. 1: one batch at a time; at most
   * {@link MAX_PIPELINE_DEPTH}.
   */
  pipelineDepth?: number;
  /** Sleep after a receive error (default 500 ms). */
  idleSleepInMs?: number;
  /**
   * Request scan period (default 1 000 ms): the request rows (cancel/retry requests not yet cleared,
   * whose wake-up may have been lost) and never-activated workflows (a lost submit wake-up).
   */
  cancelPollIntervalInMs?: number;
  /** 412 re-reads before the messages are left for redelivery (default 2). */
  flushRetryLimit?: number;
  /** Ready-repair sweep period (default 60 000 ms). */
  readySweepIntervalInMs?: number;
  /** A runtime unchanged for this long gets its ready tasks dispatched again (default 300 000 ms). */
  readyRepairThresholdInMs?: number;
  /** Lost-task sweep period (default 30 000 ms); also the period of the re-run scan (the safety net of re-runs whose wake-up was lost). */
  timeoutSweepIntervalInMs?: number;
  /**
   * Time to live of the task messages the coordinator pushes (default 7 days; Infinity: never
   * expire). A running task with a `timeout_s` counts as lost once this + its timeout + the grace
   * have passed since its dispatch.
   */
  taskMessageTtlInMs?: number;
  /** Added to the lost-task bound for the worker's kill grace and completion sends (default 15 min). */
  lostTaskGraceInMs?: number;
  /**
   * A completion or wake-up delivered this many times that still cannot be applied goes to the
   * dead-letter queue with the reason (default 20). Storage and queue outages do not count: their
   * messages wait in the queue until the service is back.
   */
  maxDeliveries?: number;
  /** Stats document period (default 10 000 ms). */
  statsIntervalInMs?: number;
  /**
   * Purge finished workflows (completed, failed, cancelled, corrupt) this long after they finished,
   * outputs included (default 0: off, workflows are kept).
   */
  retentionInMs?: number;
  /** Retention sweep period (default 60 000 ms). */
  retentionSweepIntervalInMs?: number;
  /** Workflows one retention sweep purges at most (default 100): the rest wait for the next sweeps. */
  retentionMaxPerSweep?: number;
  /** Index rows asked per request by the scans (default 1 000, the most the service returns). */
  scanPageSize?: number;
  /**
   * Task rows are written off the critical path (docs/failure-model.md, "Task rows"): a changed row
   * is written at most this long after the save that changed it (default 2 000 ms), on the loop's
   * clock, unless its write fails.
   */
  taskRowDelayInMs?: number;
  /** ...or at once when this many changed rows wait (default 256). */
  taskRowMaxPending?: number;
  /** Break a lease held by someone else (`--break-lease`; default false). */
  breakLease?: boolean;
  /**
   * While the lease is held by someone else, wait as a standby, trying to take it every
   * `leasePollIntervalInMs`, instead of failing with `lease-held` (`--wait-for-lease`; default false).
   * `stop()` ends the wait (docs/operations.md#a-standby-coordinator).
   */
  waitForLease?: boolean;
  /** How often a standby tries to take the lease (default 2 000 ms). */
  leasePollIntervalInMs?: number;
  /** The time of the timestamps the coordinator writes (default: the time of `clock`). */
  now?: () => Date;
  /**
   * The time of the loop: when scans, sweeps and stats are due, the batch-fill wait, the sleep after a
   * receive error (default the real clock; tests and simulations hand in a `VirtualClock`).
   */
  clock?: Clock;
  /** Log lines (default stderr). */
  log?: (line: string) => void;
  /** Where the metrics go (docs/metrics.md; default: nowhere). */
  instruments?: Instruments;
}

/** What the {@link Coordinator} is built from: the adapters are handed in by the app. */
export interface CoordinatorInit {
  store: WorkflowStore;
  /** The completion queue `{p}-workflow-completions` (completions and wake-ups). */
  completions: TaskQueue;
  /** The app's pool of task queues by queue spec (docs/design.md#queues-and-backends). */
  queues: QueueResolver;
  outputs: OutputStore;
  /** The worker heartbeats: rows silent for a day are deleted, at start and then once an hour (docs/design.md#worker-heartbeats). */
  workers?: WorkerRegistry;
  options?: CoordinatorOptions;
  /**
   * Bound to one shard of a sharded deployment (docs/sharding.md): a shard runner. Its lease is the
   * claim's (taken by the balancer, not by {@link WorkflowStore.acquireLease}), `completions` is the
   * shard's queue, its stats are the shard's document and its scans list only the shard's
   * workflows. Absent: the whole prefix under `_coordinator.lock`, as a deployment without shards.
   */
  shard?: CoordinatorShard;
}

/** The shard a {@link Coordinator} runs (see {@link CoordinatorInit.shard}). */
export interface CoordinatorShard {
  readonly index: number;
  readonly count: ShardCount;
  /** The claim that took the shard's lease: the coordinator works while it holds, releases it on stop. */
  readonly claim: ShardClaim;
  /**
   * Shard k's completion queue (docs/sharding.md#routing). With it, a message of another shard's
   * workflow (by `count`) is forwarded there: sent unchanged, then deleted here, counted in
   * `forwarded`. Without it, such a message is applied here, as a coordinator without shards would.
   */
  readonly queueOf?: (shard: number) => TaskQueue | Promise<TaskQueue>;
}

/** Heartbeat rows older than this are pruned. */
export const WORKER_ROW_MAX_AGE_IN_MS = 24 * 3_600_000;
/** How often the coordinator prunes old heartbeat rows. */
export const WORKER_PRUNE_INTERVAL_IN_MS = 3_600_000;

/** The coordinator's counters, as written to `_coordinator.stats.json`. */
export interface CoordinatorCounters {
  batches: number;
  messages: number;
  completionsApplied: number;
  completionsIgnored: number;
  wakeups: number;
  poison: number;
  unknownWorkflows: number;
  conflicts: number;
  leftForRedelivery: number;
  saves: number;
  rowsErrors: number;
  pushes: number;
  pushErrors: number;
  overflowBlobs: number;
  receiveErrors: number;
  ackErrors: number;
  requestsApplied: number;
  activations: number;
  timeoutSweeps: number;
  readyRepairs: number;
  /** Index rows found behind their runtime (a lost row write on a final save) and written again. */
  rowRepairs: number;
  /** Writes of waiting task rows (one per workflow per flush; see `taskRowDelayInMs`). */
  rowFlushes: number;
  /**
   * Active workflows whose task rows this coordinator wrote again when it started, because the
   * coordinator before it may have stopped with rows not yet written.
   */
  rowResyncs: number;
  sweepErrors: number;
  /** Times this coordinator found a workflow it could not process and marked it corrupt (a workflow whose runtime does not decode is marked again at each message). */
  corruptWorkflows: number;
  /** Completions and wake-ups moved to the dead-letter queue (poison aside): corrupt workflows, too many deliveries. */
  deadLettered: number;
  /** Finished workflows purged by the retention sweep (`retentionInMs`). */
  purged: number;
  /** Completions and wake-ups of other shards' workflows sent on to their shard's queue (docs/sharding.md#routing). */
  forwarded: number;
}

/**
 * Batches in flight in all (received, not yet saved) per unit of `pipelineDepth`: the batches past
 * their fold that only wait for a save (behind a large fan-out's sends, say) stop no receive until
 * there are this many times the depth of them. Depth 1 stays one batch at a time.
 */
const SAVE_BACKLOG_FACTOR = 8;
/** The most completion deletes (acks) in flight at once: a save that stands for many batches does not flood the queue. */
const ACK_CONCURRENCY = 32;

/** The most completion batches in flight at once (`pipelineDepth` above it is lowered to it). */
export const MAX_PIPELINE_DEPTH = 16;

/** Resolved {@link CoordinatorOptions}. */
export const COORDINATOR_DEFAULTS = {
  batchSize: 32,
  receiveWaitInMs: 1_000,
  batchFillWaitInMs: 50,
  batchFillMinMessages: 2,
  pipelineDepth: 8,
  idleSleepInMs: 500,
  cancelPollIntervalInMs: 1_000,
  flushRetryLimit: 2,
  readySweepIntervalInMs: 60_000,
  readyRepairThresholdInMs: 300_000,
  timeoutSweepIntervalInMs: 30_000,
  taskMessageTtlInMs: DEFAULT_TASK_MESSAGE_TTL_MS,
  lostTaskGraceInMs: DEFAULT_LOST_TASK_GRACE_MS,
  maxDeliveries: 20,
  statsIntervalInMs: 10_000,
  retentionInMs: 0,
  retentionSweepIntervalInMs: 60_000,
  retentionMaxPerSweep: 100,
  taskRowDelayInMs: 2_000,
  taskRowMaxPending: 256,
  breakLease: false,
  waitForLease: false,
  leasePollIntervalInMs: 2_000,
  scanPageSize: 1_000,
} as const;

/** Where a {@link Coordinator} is: waiting for the lease (a standby), running with it, stopping, stopped. */
export type CoordinatorPhase = 'starting' | 'waiting' | 'running' | 'stopping' | 'stopped';

/** A {@link Coordinator}'s state for the health endpoints (docs/operations.md#health-endpoints). */
export interface CoordinatorHealth {
  phase: CoordinatorPhase;
  /** `lease` while it holds the prefix's lease, `nothing` otherwise (a standby). */
  holds: 'lease' | 'nothing';
  /** When its loop (or, waiting, its lease poll) last went round (clock ms). */
  lastTickAt: number;
}

/**
 * Error codes that waiting (or an upgrade) cures, so they never count towards the delivery bound: a
 * service that is down or slow, and a workflow written by a newer jobq (`unsupported`: left for the
 * coordinators that can read it, never set aside as corrupt).
 */
const OUTAGE_CODES = new Set(['unavailable', 'timeout', 'throttled', 'aborted', 'lease-lost', 'unsupported']);

type Settings = { -readonly [K in keyof typeof COORDINATOR_DEFAULTS]: (typeof COORDINATOR_DEFAULTS)[K] extends boolean ? boolean : number };

/** One workflow's messages of a received batch: its completions (as events), and whether it holds a wake-up or a failed completion. */
interface Group {
  messages: ReceivedMessage[];
  events: WorkflowEvent[];
  wakeup: boolean;
  failures: boolean;
  /** A wake-up sent with a re-run request: the workflow's re-run records are applied right after the group. */
  reruns: boolean;
}

/** True for a wake-up sent with a re-run request (its envelope id says so). */
function isRerunWakeup(body: string, workflowId: string): boolean {
  const envelope = decodeEnvelope(body);
  return envelope.ok && envelope.value.id.startsWith(`wakeup/${workflowId}/${RERUN_WAKEUP_SUFFIX}`);
}

/** Workflows whose "not purged" reason was logged, at most this many remembered (a sweep lists them again). */
const MAX_SKIP_NOTES = 10_000;

/** Workflows the start-up resync of task rows visits per turn of the loop. */
const RESYNC_PER_TURN = 16;

/** Listings of the start-up resync of task rows when some workflows failed (an outage): then it gives up on them. */
const RESYNC_PASSES = 3;

/**
 * Where the start-up resync of task rows stands: its listing (null: start it), the workflows done,
 * whether one failed in this pass, the passes begun.
 */
interface RowResync {
  list: AsyncGenerator<WorkflowSummary> | null;
  done: Set<string>;
  failed: boolean;
  passes: number;
}

/** The later of two timestamps (null counts as none). */
function latest(a: string | null, b: string | null): string | null {
  return newer(b, a) ? b : a;
}

/** Events with the time of their request. */
type TimedEvent = { at: string; event: WorkflowEvent };

/** Oldest request first; the order given among requests made at the same time (a stable sort). */
function byRequestTime(events: TimedEvent[]): WorkflowEvent[] {
  return events.sort((x, y) => (newer(x.at, y.at) ? 1 : newer(y.at, x.at) ? -1 : 0)).map((x) => x.event);
}

/** The cancel/retry events a summary asks for, with their request times. */
function timedRequestEvents(summary: WorkflowSummary, runtime: WorkflowRuntime, now: string): TimedEvent[] {
  const out: TimedEvent[] = [];
  const cancelAt = summary.cancelRequestedAt;
  const retryAt = summary.retryRequestedAt;
  if (cancelAt !== null && newer(cancelAt, runtime.cancelAppliedAt))
    out.push({ at: cancelAt, event: { type: 'cancel', now, requestedAt: cancelAt } });
  if (retryAt !== null && newer(retryAt, runtime.retryAppliedAt))
    out.push({ at: retryAt, event: { type: 'retry', now, requestedAt: retryAt } });
  return out;
}

/** The cancel/retry events a summary asks for, oldest request first (docs/design.md#cancel-and-retry-requests). */
function requestEvents(summary: WorkflowSummary, runtime: WorkflowRuntime, now: string): WorkflowEvent[] {
  return byRequestTime(timedRequestEvents(summary, runtime, now));
}

/**
 * The events of a workflow's re-run records the runtime has not applied, each carrying the ids of
 * every record listed (so the runtime forgets applied requests whose records are gone), after the
 * cancel/retry requests of its summary, all oldest request first (docs/failure-model.md,
 * "Re-running a task").
 */
function rerunEvents(summary: WorkflowSummary, records: readonly RerunRequest[], runtime: WorkflowRuntime, now: string): WorkflowEvent[] {
  const applied = new Set((runtime.rerunsApplied ?? []).map((a) => a.id));
  const recorded = records.map((r) => r.requestId);
  const timed = timedRequestEvents(summary, runtime, now);
  for (const r of records) {
    if (applied.has(r.requestId)) continue;
    timed.push({
      at: r.requestedAt,
      event: { type: 'rerun', now, requestId: r.requestId, taskName: r.taskName, downstream: r.downstream, recorded },
    });
  }
  return byRequestTime(timed);
}

/**
 * The coordinator (docs/design.md#the-coordinator): holds the prefix's lease, folds completions and wake-ups into the
 * runtimes, performs the reducer's effects (push, then one conditional flush, then ack), applies
 * cancel/retry requests found on the index, sweeps timeouts and repairs lost ready dispatches.
 */
export class Coordinator {
  readonly counters: CoordinatorCounters = {
    batches: 0,
    messages: 0,
    completionsApplied: 0,
    completionsIgnored: 0,
    wakeups: 0,
    poison: 0,
    unknownWorkflows: 0,
    conflicts: 0,
    leftForRedelivery: 0,
    saves: 0,
    rowsErrors: 0,
    pushes: 0,
    pushErrors: 0,
    overflowBlobs: 0,
    receiveErrors: 0,
    ackErrors: 0,
    requestsApplied: 0,
    activations: 0,
    timeoutSweeps: 0,
    readyRepairs: 0,
    rowRepairs: 0,
    rowFlushes: 0,
    rowResyncs: 0,
    sweepErrors: 0,
    corruptWorkflows: 0,
    deadLettered: 0,
    purged: 0,
    forwarded: 0,
  };

  private readonly workers: WorkerRegistry | undefined;
  private readonly store: WorkflowStore;
  private readonly completions: TaskQueue;
  private readonly shard: CoordinatorShard | null;
  private readonly settings: Settings;
  private readonly clock: () => Date;
  private readonly time: Clock;
  private readonly log: (line: string) => void;
  private readonly instruments: Instruments;
  /** Queue specs dispatched to, for the queue gauges (bounded like the `queue` label). */
  private readonly dispatchedQueues = new Set<string>();
  private readonly ctx: ApplyContext;
  private readonly rows: TaskRowWriter;
  private readonly pipeline: WorkflowPipeline<Group>;
  /** Acks of saved batches, in the background. */
  private readonly acking = new Set<Promise<void>>();
  /** Messages in `acking`. */
  private ackingMessages = 0;
  /** Aborts every store/queue call: fired by the lease loss. */
  private readonly halt = new AbortController();
  /** Ends the loop after the current batch: fired by stop() and by the lease loss. */
  private readonly stopping = new AbortController();
  private lease: CoordinatorLease | null = null;
  private loop: Promise<void> | null = null;
  private leaseLostError: Error | null = null;
  private startedAt: string | null = null;
  private lastLoopAt: string | null = null;
  private stopped: Promise<void> | null = null;
  private phase: CoordinatorPhase = 'starting';
  private starting: Promise<boolean> | null = null;
  private lastTickAt: number;
  /** Workflows the retention sweep found but could not purge, with the reason logged once. */
  private readonly skipNoted = new Set<string>();

  constructor(init: CoordinatorInit) {
    const o = init.options ?? {};
    this.store = init.store;
    this.workers = init.workers;
    this.completions = init.completions;
    this.shard = init.shard ?? null;
    this.settings = {
      batchSize: o.batchSize ?? COORDINATOR_DEFAULTS.batchSize,
      receiveWaitInMs: o.receiveWaitInMs ?? COORDINATOR_DEFAULTS.receiveWaitInMs,
      batchFillWaitInMs: o.batchFillWaitInMs ?? COORDINATOR_DEFAULTS.batchFillWaitInMs,
      batchFillMinMessages: Math.max(1, Math.floor(o.batchFillMinMessages ?? COORDINATOR_DEFAULTS.batchFillMinMessages)),
      pipelineDepth: Math.min(MAX_PIPELINE_DEPTH, Math.max(1, Math.floor(o.pipelineDepth ?? COORDINATOR_DEFAULTS.pipelineDepth))),
      idleSleepInMs: o.idleSleepInMs ?? COORDINATOR_DEFAULTS.idleSleepInMs,
      cancelPollIntervalInMs: o.cancelPollIntervalInMs ?? COORDINATOR_DEFAULTS.cancelPollIntervalInMs,
      flushRetryLimit: o.flushRetryLimit ?? COORDINATOR_DEFAULTS.flushRetryLimit,
      readySweepIntervalInMs: o.readySweepIntervalInMs ?? COORDINATOR_DEFAULTS.readySweepIntervalInMs,
      readyRepairThresholdInMs: o.readyRepairThresholdInMs ?? COORDINATOR_DEFAULTS.readyRepairThresholdInMs,
      timeoutSweepIntervalInMs: o.timeoutSweepIntervalInMs ?? COORDINATOR_DEFAULTS.timeoutSweepIntervalInMs,
      taskMessageTtlInMs: o.taskMessageTtlInMs ?? COORDINATOR_DEFAULTS.taskMessageTtlInMs,
      lostTaskGraceInMs: o.lostTaskGraceInMs ?? COORDINATOR_DEFAULTS.lostTaskGraceInMs,
      maxDeliveries: Math.max(1, Math.floor(o.maxDeliveries ?? COORDINATOR_DEFAULTS.maxDeliveries)),
      statsIntervalInMs: o.statsIntervalInMs ?? COORDINATOR_DEFAULTS.statsIntervalInMs,
      retentionInMs: o.retentionInMs ?? COORDINATOR_DEFAULTS.retentionInMs,
      retentionSweepIntervalInMs: o.retentionSweepIntervalInMs ?? COORDINATOR_DEFAULTS.retentionSweepIntervalInMs,
      retentionMaxPerSweep: Math.max(1, Math.floor(o.retentionMaxPerSweep ?? COORDINATOR_DEFAULTS.retentionMaxPerSweep)),
      taskRowDelayInMs: Math.max(0, o.taskRowDelayInMs ?? COORDINATOR_DEFAULTS.taskRowDelayInMs),
      taskRowMaxPending: Math.max(1, Math.floor(o.taskRowMaxPending ?? COORDINATOR_DEFAULTS.taskRowMaxPending)),
      breakLease: o.breakLease ?? COORDINATOR_DEFAULTS.breakLease,
      waitForLease: o.waitForLease ?? COORDINATOR_DEFAULTS.waitForLease,
      leasePollIntervalInMs: Math.max(1, o.leasePollIntervalInMs ?? COORDINATOR_DEFAULTS.leasePollIntervalInMs),
      scanPageSize: Math.min(1_000, Math.max(1, Math.floor(o.scanPageSize ?? COORDINATOR_DEFAULTS.scanPageSize))),
    };
    const time = o.clock ?? realClock;
    this.time = time;
    this.lastTickAt = time.now();
    this.clock = o.now ?? (() => new Date(time.now()));
    this.log = o.log ?? ((line) => process.stderr.write(`coordinator: ${line}\n`));
    this.instruments = o.instruments ?? noopInstruments;
    this.rows = new TaskRowWriter({
      store: init.store,
      clock: time,
      delayInMs: this.settings.taskRowDelayInMs,
      maxPending: this.settings.taskRowMaxPending,
      signal: this.halt.signal,
      log: this.log,
      counters: this.counters,
    });
    this.ctx = {
      store: init.store,
      outputs: init.outputs,
      queues: init.queues,
      now: () => this.nowIso(),
      log: this.log,
      flushRetryLimit: this.settings.flushRetryLimit,
      signal: this.halt.signal,
      counters: this.counters,
      cache: new RuntimeCache(),
      taskMessageTtlInMs: this.settings.taskMessageTtlInMs,
      rows: this.rows,
      instruments: this.instruments,
      clock: time,
      dispatched: (queue) => {
        if (this.dispatchedQueues.size < MAX_QUEUE_LABEL_VALUES) this.dispatchedQueues.add(queue);
      },
    };
    this.pipeline = new WorkflowPipeline<Group>({
      ctx: this.ctx,
      plain: (workflowId, group, conflicts) => this.handleGroup(workflowId, group, conflicts),
      left: (workflowId, group, reason) => this.leave(workflowId, group.messages, reason, true),
      settled: (_workflowId, group, events) => {
        this.countOutcomes(events);
        this.ackInBackground(group.messages);
      },
    });
  }

  /** The state the health endpoints report. */
  health(): CoordinatorHealth {
    const holds = this.lease !== null && this.phase !== 'stopped' && !this.halt.signal.aborted ? 'lease' : 'nothing';
    return { phase: this.phase, holds, lastTickAt: this.lastTickAt };
  }

  /**
   * Takes the lease (`lease-held` while someone else has it; with `waitForLease`, waits for it until
   * it is free or `stop()` is called) and starts the loop in the background. Returns false when
   * stopped while waiting (nothing was started), true otherwise.
   */
  start(): Promise<boolean> {
    if (this.starting) throw new Error('Coordinator.start() was already called; make a new Coordinator');
    this.starting = this.begin();
    return this.starting;
  }

  private async begin(): Promise<boolean> {
    const taken = await this.acquireLease();
    if (taken === null) {
      this.phase = 'stopped';
      this.loop = Promise.resolve();
      return false;
    }
    this.lease = taken;
    const lease = taken;
    this.phase = this.stopping.signal.aborted ? 'stopping' : 'running';
    this.startedAt = this.nowIso();
    const onLost = () => {
      const reason: unknown = lease.lost.reason;
      this.leaseLostError = reason instanceof Error ? reason : new JobqError('lease-lost', 'the coordinator lease was lost');
      this.log(`lease lost: stopping at once (${describeError(this.leaseLostError)})`);
      this.halt.abort(this.leaseLostError);
      this.stopping.abort('lease lost');
    };
    if (lease.lost.aborted) onLost();
    else lease.lost.addEventListener('abort', onLost, { once: true });
    this.loop = this.mainLoop();
    return true;
  }

  /** The lease, or null when `stop()` ended the wait for it. */
  private async acquireLease(): Promise<CoordinatorLease | null> {
    if (this.shard !== null) return this.shard.claim.lease;
    let waiting = false;
    for (;;) {
      this.lastTickAt = this.time.now();
      if (waiting && this.stopping.signal.aborted) return null;
      try {
        const lease = await this.store.acquireLease({ breakExisting: this.settings.breakLease });
        if (waiting) this.log('the lease is free: taken over');
        return lease;
      } catch (error) {
        if (!this.settings.waitForLease || !isJobqError(error, 'lease-held')) throw error;
        if (!waiting) {
          this.log(
            `the lease is held by another coordinator: waiting as a standby (trying every ${this.settings.leasePollIntervalInMs} ms)`,
          );
          waiting = true;
          if (this.phase === 'starting') this.phase = 'waiting';
        }
      }
      if (this.stopping.signal.aborted) return null;
      await this.time.sleep(this.settings.leasePollIntervalInMs, this.stopping.signal);
    }
  }

  /** {@link start}, then waits until the coordinator stops; rejects with the `lease-lost` error when the lease was lost. */
  async run(): Promise<void> {
    if (!this.starting) await this.start();
    else await this.starting;
    await this.loop;
    if (this.stopped) await this.stopped;
    if (this.leaseLostError !== null) throw this.leaseLostError;
  }

  /** Finishes the current batch, writes the task rows still waiting and the stats, releases the lease. Harmless when called twice. */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  /** The counters plus times, as written to the stats document. */
  stats(): Record<string, unknown> {
    return {
      ...this.counters,
      taskRowsPending: this.rows.pendingRows,
      startedAt: this.startedAt,
      lastLoopAt: this.lastLoopAt,
      writtenAt: this.nowIso(),
      leaseId: this.lease?.leaseId ?? null,
      ...(this.shard === null
        ? {}
        : { shard: this.shard.index, shards: this.shard.count, epoch: this.shard.claim.epoch, owner: this.shard.claim.owner }),
    };
  }

  private async doStop(): Promise<void> {
    if (this.phase !== 'stopped') this.phase = 'stopping';
    this.stopping.abort('stop');
    // A start still taking (or waiting for) the lease ends first: a lease it got is released below.
    if (this.starting) await this.starting.catch(() => undefined);
    if (this.loop) await this.loop;
    try {
      if (this.lease && !this.halt.signal.aborted) {
        await this.rows.flushAll();
        await this.writeStats();
        await this.lease.release();
      }
    } finally {
      this.phase = 'stopped';
    }
  }

  private nowIso(): string {
    return this.clock().toISOString();
  }

  private async mainLoop(): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    try {
      await this.turns(inFlight);
    } finally {
      // Stopping: the batches in flight are saved (or left) and acked before the loop ends.
      await Promise.all(inFlight);
      while (this.acking.size > 0) await Promise.all(this.acking);
    }
  }

  /**
   * The loop's turns: scans and sweeps when due, then a receive. Up to `pipelineDepth` batches are
   * before their fold at once; `inFlight` holds every batch until it is saved (or left), at most
   * `pipelineDepth × SAVE_BACKLOG_FACTOR` of them.
   */
  private async turns(inFlight: Set<Promise<void>>): Promise<void> {
    const folding = new Set<Promise<void>>();
    const start = this.time.now();
    const due = {
      scan: 0,
      reruns: 0,
      timeout: start + this.settings.timeoutSweepIntervalInMs,
      ready: start + this.settings.readySweepIntervalInMs,
      retention: 0,
      stats: 0,
      workers: 0,
    };
    // The task rows of the active workflows may be behind their runtimes (a coordinator that stopped
    // before writing them): they are written again, a few workflows per turn (docs/failure-model.md).
    let resync: RowResync | null = { list: null, done: new Set(), failed: false, passes: 0 };
    let partialBatch = false;
    let lastReceiveAt = 0;
    while (!this.stopping.signal.aborted) {
      const t = this.time.now();
      this.lastTickAt = t;
      this.lastLoopAt = this.nowIso();
      if (t >= due.scan) {
        due.scan = t + this.settings.cancelPollIntervalInMs;
        await this.guard('request scan', () => this.scanRequests());
      }
      if (t >= due.reruns && !this.stopping.signal.aborted) {
        due.reruns = t + this.settings.timeoutSweepIntervalInMs;
        await this.guard('re-run scan', () => this.scanReruns());
      }
      if (t >= due.timeout && !this.stopping.signal.aborted) {
        due.timeout = t + this.settings.timeoutSweepIntervalInMs;
        await this.guard('timeout sweep', () => this.timeoutSweep());
      }
      if (t >= due.ready && !this.stopping.signal.aborted) {
        due.ready = t + this.settings.readySweepIntervalInMs;
        await this.guard('ready-repair sweep', () => this.readyRepair());
      }
      if (this.retentionOn() && t >= due.retention && !this.stopping.signal.aborted) {
        due.retention = t + this.settings.retentionSweepIntervalInMs;
        await this.guard('retention sweep', () => this.retentionSweep());
      }
      const workers = this.workers;
      if (workers !== undefined && t >= due.workers && !this.stopping.signal.aborted) {
        due.workers = t + WORKER_PRUNE_INTERVAL_IN_MS;
        await this.guard('heartbeat prune', async () => {
          const pruned = await workers.prune(WORKER_ROW_MAX_AGE_IN_MS, { abortSignal: this.halt.signal });
          if (pruned > 0) this.log(`pruned ${pruned} worker heartbeat row(s) silent for a day`);
        });
      }
      if (t >= due.stats && !this.stopping.signal.aborted) {
        due.stats = t + this.settings.statsIntervalInMs;
        await this.writeStats();
      }
      if (resync !== null && !this.stopping.signal.aborted) {
        const state = resync;
        let done = false;
        await this.guard('task row resync', async () => {
          done = await this.resyncRows(state);
        });
        if (done) resync = null;
      }
      if (this.stopping.signal.aborted) break;
      // At most pipelineDepth batches before their fold, a bounded backlog behind saves, and not
      // too many acks behind.
      const depth = this.settings.pipelineDepth;
      const backlog = depth === 1 ? 1 : depth * SAVE_BACKLOG_FACTOR;
      if (folding.size >= depth || inFlight.size >= backlog || this.ackingMessages >= backlog * this.settings.batchSize) {
        await Promise.race([...folding, ...inFlight, ...this.acking]);
        continue;
      }
      if (partialBatch) {
        const wait = lastReceiveAt + this.settings.batchFillWaitInMs - this.time.now();
        if (wait > 0) await this.time.sleep(wait, this.stopping.signal);
        if (this.stopping.signal.aborted) break;
      }
      lastReceiveAt = this.time.now();
      let messages: ReceivedMessage[];
      try {
        messages = await this.completions.receive({
          maxMessages: this.settings.batchSize,
          maxWaitTimeInMs: this.settings.receiveWaitInMs,
          abortSignal: this.stopping.signal,
        });
      } catch (error) {
        if (this.stopping.signal.aborted) break;
        this.counters.receiveErrors++;
        this.log(`receive failed: ${describeError(error)}`);
        await this.time.sleep(this.settings.idleSleepInMs, this.stopping.signal);
        continue;
      }
      partialBatch = messages.length >= this.settings.batchFillMinMessages && messages.length < this.settings.batchSize;
      if (messages.length > 0) {
        let foldedAll!: () => void;
        const folded = new Promise<void>((resolve) => (foldedAll = resolve));
        folding.add(folded);
        void folded.then(() => folding.delete(folded));
        const batch: Promise<void> = this.guard('batch', () => this.handleBatch(messages, foldedAll))
          .finally(foldedAll)
          .finally(() => inFlight.delete(batch));
        inFlight.add(batch);
      }
    }
  }

  private async guard(what: string, run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (error) {
      if (this.halt.signal.aborted) return;
      this.counters.sweepErrors++;
      this.log(`${what} failed: ${describeError(error)}`);
    }
  }

  private async writeStats(): Promise<void> {
    if (this.halt.signal.aborted) return;
    if (this.instruments.enabled) await this.sampleQueues();
    try {
      await this.store.writeCoordinatorStats(this.stats(), {
        abortSignal: this.halt.signal,
        ...(this.shard === null ? {} : { shard: this.shard.index }),
      });
    } catch (error) {
      this.log(`writing stats failed: ${describeError(error)}`);
    }
  }

  /** The queue gauges (only when metrics are recorded: one request per queue per stats period). */
  private async sampleQueues(): Promise<void> {
    const sample = async (spec: string, role: 'completions' | 'tasks', queue: () => TaskQueue | Promise<TaskQueue>): Promise<void> => {
      try {
        const count = await (await queue()).approximateMessageCount({ abortSignal: this.halt.signal });
        this.instruments.set('jobq_queue_messages', { queue: spec, role }, count);
      } catch {
        // A metric never stops the coordinator; the gauge keeps its last value.
      }
    };
    await Promise.all([
      sample(this.completions.name, 'completions', () => this.completions),
      ...[...this.dispatchedQueues].map((spec) => sample(spec, 'tasks', () => this.ctx.queues(spec))),
    ]);
  }

  /**
   * One received batch: poison out, group by workflow, each group into the pipeline (in the order
   * received, before anything is awaited, so a workflow's batches keep their order).
   */
  private async handleBatch(messages: ReceivedMessage[], foldedAll: () => void): Promise<void> {
    this.counters.batches++;
    this.counters.messages += messages.length;
    this.instruments.observe('jobq_coordinator_batch_messages', {}, messages.length);
    const groups = new Map<string, Group>();
    const poison: Array<{ message: ReceivedMessage; reason: string }> = [];
    const forwards: Array<Promise<void>> = [];
    // Each completion's handling is a span under the worker's (docs/observability.md#tracing), ended once its group is done.
    const spans = new Map<string, Span[]>();
    const now = this.nowIso();
    for (const message of messages) {
      const decoded = decodeCoordinatorMessage(message.body);
      if (decoded.kind === 'poison') {
        this.countCompletions('poison');
        this.log(`poison message ${message.messageId}: ${decoded.reason}`);
        poison.push({ message, reason: decoded.reason });
        continue;
      }
      const workflowId = decoded.kind === 'wakeup' ? decoded.workflowId : decoded.completion.workflowId;
      const home = this.homeShard(workflowId);
      if (home !== null) {
        forwards.push(this.forward(message, home, decoded.kind === 'completion' ? completionMessageId(decoded.completion) : undefined));
        continue;
      }
      let group = groups.get(workflowId);
      if (!group) {
        group = { messages: [], events: [], wakeup: false, failures: false, reruns: false };
        groups.set(workflowId, group);
      }
      group.messages.push(message);
      if (decoded.kind === 'wakeup') {
        this.counters.wakeups++;
        group.wakeup = true;
        if (isRerunWakeup(message.body, workflowId)) group.reruns = true;
      } else {
        const c = decoded.completion;
        const span = startProcessSpan(
          remoteSpanContext(decoded.trace?.traceparent, decoded.trace?.tracestate),
          this.completions.name,
          this.completions.name,
          {
            'messaging.message.id': message.messageId,
            'jobq.workflow.id': workflowId,
            'jobq.task': c.taskName,
            ...(c.attemptNo === null ? {} : { 'jobq.attempt': c.attemptNo }),
            'jobq.success': c.success,
          },
        );
        const list = spans.get(workflowId);
        if (list) list.push(span);
        else spans.set(workflowId, [span]);
        if (!c.success) group.failures = true;
        group.events.push({
          type: 'completion',
          now,
          taskName: c.taskName,
          attemptNo: c.attemptNo,
          success: c.success,
          outputRef: c.outputRef,
          error: c.error,
        });
      }
    }
    // A wake-up or a failed completion reads the requests first (applyGroup): the plain path.
    let unfolded = groups.size;
    if (unfolded === 0) foldedAll();
    const runs = [...groups].map(([workflowId, group]) =>
      this.guard(`workflow ${workflowId}`, () =>
        this.pipeline.run(workflowId, group, !group.wakeup && !group.failures, () => --unfolded === 0 && foldedAll()),
      ).finally(() => {
        for (const span of spans.get(workflowId) ?? []) endSpan(span);
      }),
    );
    // A re-run request's wake-up: its records are applied right after the group, in turn with it.
    for (const [workflowId, group] of groups) {
      if (group.reruns)
        runs.push(
          this.guard(`re-runs of workflow ${workflowId}`, () => this.pipeline.exclusive(workflowId, () => this.applyReruns(workflowId))),
        );
    }
    await Promise.all([...runs, ...forwards, ...poison.map(({ message, reason }) => this.dropPoison(message, reason))]);
  }

  /** The shard a message of `workflowId` is to be forwarded to; null when it is this runner's (or it forwards nothing). */
  private homeShard(workflowId: string): number | null {
    if (this.shard?.queueOf === undefined) return null;
    const home = shardOf(workflowId, this.shard.count);
    return home === this.shard.index ? null : home;
  }

  /**
   * Sends a message of another shard's workflow on to that shard's queue, body unchanged (a
   * completion keeps its message id), then deletes it here: at least once. A failed send leaves it
   * for redelivery; a failed delete sends it again later, which its shard applies once.
   */
  private async forward(message: ReceivedMessage, shard: number, messageId: string | undefined): Promise<void> {
    const op = { abortSignal: this.halt.signal };
    try {
      const queue = await this.shard!.queueOf!(shard);
      await queue.send({ body: message.body, ...(messageId === undefined ? {} : { messageId }) }, op);
    } catch (error) {
      if (this.halt.signal.aborted) return;
      this.counters.leftForRedelivery++;
      this.log(`forwarding message ${message.messageId} to shard ${shard} failed (${describeError(error)}); left for redelivery`);
      return;
    }
    this.counters.forwarded++;
    await this.ack([message]);
  }

  /** Counts completions (and poison messages) in the stats and in the metrics alike. */
  private countCompletions(result: 'applied' | 'ignored' | 'poison', n = 1): void {
    if (n <= 0) return;
    if (result === 'applied') this.counters.completionsApplied += n;
    else if (result === 'ignored') this.counters.completionsIgnored += n;
    else this.counters.poison += n;
    this.instruments.inc('jobq_coordinator_completions_total', { result }, n);
  }

  private async handleGroup(workflowId: string, group: Group, conflicts = 0): Promise<void> {
    try {
      await this.applyGroup(workflowId, group, conflicts);
    } catch (error) {
      if (this.halt.signal.aborted) return;
      this.counters.sweepErrors++;
      this.log(`workflow ${workflowId} failed: ${describeError(error)}`);
      const outage = isJobqError(error) && (error.retryable || OUTAGE_CODES.has(error.code));
      if (!outage) await this.boundDeliveries(group.messages, `processing workflow ${workflowId} failed: ${describeError(error)}`);
    }
  }

  private async applyGroup(workflowId: string, group: Group, conflicts: number): Promise<void> {
    // A wake-up (submit, cancel, retry) also applies the requests recorded on the index row at once;
    // so does a failed completion, which may come from a task its worker stopped because it saw a
    // cancel request the coordinator has not applied yet (applied first, the task ends cancelled).
    const readRequests = group.wakeup || group.failures;
    const summary = readRequests ? await this.store.getWorkflow(workflowId, { abortSignal: this.halt.signal }) : null;
    const now = this.nowIso();
    const outcome = await applyEvents(
      this.ctx,
      workflowId,
      (runtime) => {
        const events: WorkflowEvent[] = summary ? requestEvents(summary, runtime, now) : [];
        if (group.wakeup) events.push({ type: 'activate', now });
        return [...events, ...group.events];
      },
      { useCache: true, conflicts },
    );
    if (outcome.kind === 'missing') {
      this.counters.unknownWorkflows++;
      this.countCompletions('ignored', group.events.length);
      this.log(`workflow ${workflowId}: unknown; ${group.messages.length} message(s) dropped`);
      await this.ack(group.messages);
      return;
    }
    if (outcome.kind === 'corrupt') {
      const reason = await this.setAside(workflowId, outcome);
      if (reason === null) return; // the runtime moved on meanwhile: the messages come back to a fresh state
      this.countCompletions('ignored', group.events.length);
      await this.deadLetterAll(group.messages, `workflow ${workflowId} is corrupt (${reason}): set aside until it is purged`);
      return;
    }
    if (outcome.kind === 'retry-later') {
      await this.leave(workflowId, group.messages, outcome.reason, outcome.outage);
      return;
    }
    this.countOutcomes(outcome.events);
    await this.ack(group.messages);
  }

  /** Leaves messages for their redelivery; unless an outage is the reason, those delivered too often go to the dead-letter queue. */
  private async leave(workflowId: string, messages: readonly ReceivedMessage[], reason: string, outage: boolean): Promise<void> {
    this.counters.leftForRedelivery += messages.length;
    this.log(`workflow ${workflowId}: ${reason}; ${messages.length} message(s) left for redelivery`);
    if (!outage) await this.boundDeliveries(messages, reason);
  }

  /**
   * Sets a workflow the coordinator cannot process aside as `corrupt`, with the reason: in its
   * runtime when that still decodes (so any later load sees it), else on its index row. Returns the
   * reason, or null when the runtime changed under us (it is processed afresh next time).
   */
  private async setAside(workflowId: string, outcome: Extract<ApplyOutcome, { kind: 'corrupt' }>): Promise<string | null> {
    const op = { abortSignal: this.halt.signal };
    if (outcome.already) return outcome.reason;
    this.ctx.cache?.delete(workflowId);
    const now = this.nowIso();
    if (outcome.runtime !== null && outcome.etag !== null) {
      const marked = reduce(outcome.runtime, { type: 'corrupt', now, reason: outcome.reason }).runtime;
      try {
        await saveRuntime(this.ctx, marked, outcome.etag, { base: outcome.runtime, cached: false, rowsKnown: false });
      } catch (error) {
        if (isJobqError(error, 'conflict')) return null;
        this.log(`workflow ${workflowId}: could not save it as corrupt (${describeError(error)}); marking its index row`);
        await this.store.markCorrupt(workflowId, outcome.reason, now, op);
      }
    } else {
      await this.store.markCorrupt(workflowId, outcome.reason, now, op);
    }
    this.counters.corruptWorkflows++;
    this.log(`workflow ${workflowId}: set aside as corrupt: ${outcome.reason}`);
    return outcome.reason;
  }

  /** Messages delivered `maxDeliveries` times or more go to the dead-letter queue with the reason; the rest stay for redelivery. */
  private async boundDeliveries(messages: readonly ReceivedMessage[], reason: string): Promise<void> {
    const spent = messages.filter((m) => m.deliveryCount >= this.settings.maxDeliveries);
    if (spent.length > 0)
      await this.deadLetterAll(spent, `delivered ${this.settings.maxDeliveries} times without being applied: ${reason}`);
  }

  private async deadLetterAll(messages: readonly ReceivedMessage[], reason: string): Promise<void> {
    await Promise.all(
      messages.map(async (message) => {
        try {
          await this.completions.deadLetter(message, reason, { abortSignal: this.halt.signal });
          this.counters.deadLettered++;
          this.log(`message ${message.messageId} moved to the dead-letter queue: ${reason}`);
        } catch (error) {
          // Left in the queue: it comes back and meets the same fate.
          this.counters.ackErrors++;
          this.log(`dead-lettering ${message.messageId} failed: ${describeError(error)}`);
        }
      }),
    );
  }

  /**
   * Counts what the events of a saved batch came to: each completion applied or ignored, each
   * request (cancel, retry, re-run) and activation the reducer did not ignore.
   */
  private countOutcomes(events: readonly EventOutcome[]): void {
    for (const { event, effects } of events) {
      const ignored = effects.some((e) => e.type === 'ignored');
      switch (event.type) {
        case 'completion':
          this.countCompletions(ignored ? 'ignored' : 'applied');
          break;
        case 'activate':
          if (!ignored) this.counters.activations++;
          break;
        case 'cancel':
        case 'retry':
        case 'rerun':
          if (!ignored) this.counters.requestsApplied++;
          break;
        default:
          break;
      }
    }
  }

  private async dropPoison(message: ReceivedMessage, reason: string): Promise<void> {
    try {
      await this.completions.deadLetter(message, reason, { abortSignal: this.halt.signal });
    } catch (error) {
      this.log(`dead-lettering poison message ${message.messageId} failed (${describeError(error)}); deleting it`);
      try {
        await this.completions.complete(message, { abortSignal: this.halt.signal });
      } catch (again) {
        this.counters.ackErrors++;
        this.log(`deleting poison message ${message.messageId} failed: ${describeError(again)}`);
      }
    }
  }

  private readonly ackLimit = new Limit(ACK_CONCURRENCY);

  private ackInBackground(messages: readonly ReceivedMessage[]): void {
    this.ackingMessages += messages.length;
    const acked: Promise<void> = this.ack(messages).finally(() => {
      this.acking.delete(acked);
      this.ackingMessages -= messages.length;
    });
    this.acking.add(acked);
  }

  private async ack(messages: readonly ReceivedMessage[]): Promise<void> {
    await Promise.all(
      messages.map(async (message) => {
        try {
          await this.ackLimit.run(() => this.completions.complete(message, { abortSignal: this.halt.signal }));
        } catch (error) {
          // Redelivered and applied again idempotently.
          this.counters.ackErrors++;
          this.log(`ack of ${message.messageId} failed: ${describeError(error)}`);
        }
      }),
    );
  }

  /** What the store calls take to stay in this coordinator's shard: nothing without one. */
  private shardFilter(): { shard?: ShardFilter } {
    return this.shard === null ? {} : { shard: { index: this.shard.index, count: this.shard.count } };
  }

  /**
   * The index rows a filter finds, page by page: every scan asks only server-side filters (saved
   * status, times) paged by the store's continuation tokens, never the derived `pending` status,
   * so a scan costs about one request per page of matches (1 000 by default) and never reads the finished workflows.
   */
  private async *summaries(filter: Omit<WorkflowFilter, 'continuationToken' | 'abortSignal' | 'limit'>): AsyncGenerator<WorkflowSummary> {
    let continuationToken: string | undefined;
    do {
      const page = await this.store.listWorkflows({
        ...filter,
        ...this.shardFilter(),
        limit: this.settings.scanPageSize,
        abortSignal: this.halt.signal,
        ...(continuationToken === undefined ? {} : { continuationToken }),
      });
      for (const item of page.items) yield item;
      continuationToken = page.continuationToken ?? undefined;
    } while (continuationToken !== undefined && !this.stopping.signal.aborted);
  }

  /** The request rows not yet cleared, page by page. */
  private async *requests(): AsyncGenerator<WorkflowRequest> {
    let continuationToken: string | undefined;
    do {
      const page = await this.store.listRequests({
        ...this.shardFilter(),
        limit: this.settings.scanPageSize,
        abortSignal: this.halt.signal,
        ...(continuationToken === undefined ? {} : { continuationToken }),
      });
      for (const item of page.items) yield item;
      continuationToken = page.continuationToken ?? undefined;
    } while (continuationToken !== undefined && !this.stopping.signal.aborted);
  }

  /** The re-run records not yet cleared (of one workflow with `workflowId`), page by page. */
  private async *reruns(workflowId?: string): AsyncGenerator<RerunRequest> {
    let continuationToken: string | undefined;
    do {
      const page = await this.store.listReruns({
        ...(workflowId === undefined ? this.shardFilter() : {}),
        limit: this.settings.scanPageSize,
        abortSignal: this.halt.signal,
        ...(workflowId === undefined ? {} : { workflowId }),
        ...(continuationToken === undefined ? {} : { continuationToken }),
      });
      for (const item of page.items) yield item;
      continuationToken = page.continuationToken ?? undefined;
    } while (continuationToken !== undefined && !this.stopping.signal.aborted);
  }

  /**
   * Activation, as a safety net for lost wake-ups: every request row (a cancel or retry not
   * yet cleared, on a finished workflow too), then every workflow never activated. Two queries on
   * an idle deployment, whatever the number of finished workflows.
   */
  private async scanRequests(): Promise<void> {
    for await (const request of this.requests()) {
      if (this.stopping.signal.aborted) return;
      await this.guard(`workflow ${request.workflowId}`, () =>
        this.pipeline.exclusive(request.workflowId, () => this.applyRequestRow(request)),
      );
    }
    for await (const summary of this.summaries({ savedStatus: ['pending'] })) {
      if (this.stopping.signal.aborted) return;
      await this.guard(`workflow ${summary.workflowId}`, () =>
        this.pipeline.exclusive(summary.workflowId, async () => {
          await this.applyRequests(summary);
        }),
      );
    }
  }

  /**
   * The safety net of re-run requests (at start and every `timeoutSweepIntervalInMs`): a re-run's
   * wake-up applies it at once, so this finds only requests whose wake-up was lost and records whose
   * clear was. Every workflow with re-run records has them applied; one query on an idle deployment.
   */
  private async scanReruns(): Promise<void> {
    // A workflow's records are listed together (key order): each workflow is applied once.
    let last: string | null = null;
    for await (const rerun of this.reruns()) {
      if (this.stopping.signal.aborted) return;
      if (rerun.workflowId === last) continue;
      last = rerun.workflowId;
      const id = rerun.workflowId;
      await this.guard(`re-runs of workflow ${id}`, () => this.pipeline.exclusive(id, () => this.applyReruns(id)));
    }
  }

  /**
   * Applies a request row's requests (and those on the index row, the newer of each) to its
   * workflow, then clears the row (only while unchanged: a newer request keeps it) once the runtime
   * has applied them, or when the workflow is gone or set aside as corrupt.
   */
  private async applyRequestRow(request: WorkflowRequest): Promise<void> {
    const op = { abortSignal: this.halt.signal };
    const id = request.workflowId;
    const row = await this.store.getWorkflow(id, op);
    if (row === null) {
      await this.store.clearRequest(id, request.etag, op); // purged, or never submitted
      return;
    }
    const summary: WorkflowSummary = {
      ...row,
      cancelRequestedAt: latest(row.cancelRequestedAt, request.cancelRequestedAt),
      retryRequestedAt: latest(row.retryRequestedAt, request.retryRequestedAt),
    };
    const outcome = await this.applyRequests(summary);
    const done =
      outcome.kind === 'missing' ||
      (outcome.kind === 'corrupt' && outcome.handled) ||
      (outcome.kind === 'applied' &&
        (outcome.runtime.status === 'corrupt' ||
          (!newer(request.cancelRequestedAt, outcome.runtime.cancelAppliedAt) &&
            !newer(request.retryRequestedAt, outcome.runtime.retryAppliedAt))));
    if (done) await this.store.clearRequest(id, request.etag, op);
  }

  /**
   * Applies a workflow's re-run records (docs/failure-model.md, "Re-running a task"): lists them
   * all, applies those the runtime has not applied (with the cancel/retry requests of its index row,
   * oldest request first) in one save, then clears every record whose id the saved runtime lists as
   * applied. A record listed again after a save whose clear was lost is recognised by its id and
   * cleared, never applied twice. The records of a workflow that is gone, or set aside as corrupt,
   * are cleared.
   */
  private async applyReruns(workflowId: string): Promise<void> {
    const op = { abortSignal: this.halt.signal };
    const records: RerunRequest[] = [];
    for await (const record of this.reruns(workflowId)) records.push(record);
    if (records.length === 0) return;
    const clear = async (which: readonly RerunRequest[]): Promise<void> => {
      for (const r of which) await this.store.clearRerun(workflowId, r.requestId, r.etag, op);
    };
    const summary = await this.store.getWorkflow(workflowId, op);
    if (summary === null) {
      await clear(records); // purged, or never submitted
      return;
    }
    const now = this.nowIso();
    const outcome = await applyEvents(this.ctx, workflowId, (runtime) => rerunEvents(summary, records, runtime, now));
    if (outcome.kind === 'missing') return clear(records);
    if (outcome.kind === 'corrupt') {
      if ((await this.setAside(workflowId, outcome)) !== null) await clear(records);
      return;
    }
    if (outcome.kind === 'retry-later') {
      this.log(`workflow ${workflowId}: ${outcome.reason}; its re-run requests will be tried again`);
      return;
    }
    this.countOutcomes(outcome.events);
    if (!outcome.saved) await this.repairRows(summary, outcome.runtime);
    const runtime = outcome.runtime;
    if (runtime.status === 'corrupt') return clear(records);
    const applied = new Set((runtime.rerunsApplied ?? []).map((a) => a.id));
    await clear(records.filter((r) => applied.has(r.requestId)));
  }

  /**
   * Applies the requests a summary holds that the runtime has not applied, and activates a
   * workflow not yet activated. A row found behind its runtime is written again.
   */
  private async applyRequests(
    summary: WorkflowSummary,
  ): Promise<{ kind: 'applied'; runtime: WorkflowRuntime } | { kind: 'missing' | 'retry-later' } | { kind: 'corrupt'; handled: boolean }> {
    const now = this.nowIso();
    const outcome = await applyEvents(this.ctx, summary.workflowId, (runtime) => {
      const events = requestEvents(summary, runtime, now);
      if (!runtime.activated) events.push({ type: 'activate', now });
      return events;
    });
    if (outcome.kind === 'applied') {
      this.countOutcomes(outcome.events);
      if (!outcome.saved) await this.repairRows(summary, outcome.runtime);
      return { kind: 'applied', runtime: outcome.runtime };
    }
    if (outcome.kind === 'retry-later') {
      this.log(`workflow ${summary.workflowId}: ${outcome.reason}; will try again`);
      return { kind: 'retry-later' };
    }
    if (outcome.kind === 'corrupt') return { kind: 'corrupt', handled: (await this.setAside(summary.workflowId, outcome)) !== null };
    return { kind: 'missing' };
  }

  /**
   * One turn of the start-up resync of task rows: up to {@link RESYNC_PER_TURN} active workflows
   * (saved status running or cancelling). True once every one was done (a workflow that failed,
   * say in an outage, is tried again in a new listing, up to {@link RESYNC_PASSES}). A workflow this
   * coordinator has loaded already is skipped (its first save wrote, or queued, every row); any
   * other has every task row queued from its runtime, which then stays cached, so its next save
   * writes only what it changes. A finished runtime behind its index row gets the row repair.
   */
  private async resyncRows(state: RowResync): Promise<boolean> {
    if (state.list === null) {
      if (state.passes >= RESYNC_PASSES) return true;
      state.passes++;
      state.failed = false;
      state.list = this.summaries({ savedStatus: ['running', 'cancelling'] });
    }
    for (let i = 0; i < RESYNC_PER_TURN; i++) {
      let next: IteratorResult<WorkflowSummary>;
      try {
        next = await state.list.next();
      } catch (error) {
        state.list = null; // listed again next turn; the workflows done are skipped
        throw error;
      }
      if (next.done) {
        state.list = null;
        return !state.failed || this.stopping.signal.aborted;
      }
      const id = next.value.workflowId;
      if (state.done.has(id)) continue;
      try {
        const summary = next.value;
        await this.pipeline.exclusive(id, () => this.resyncWorkflow(summary));
        state.done.add(id);
      } catch (error) {
        if (this.halt.signal.aborted) throw error;
        state.failed = true;
        this.counters.sweepErrors++;
        this.log(`workflow ${id}: writing its task rows again failed: ${describeError(error)}`);
      }
    }
    return false;
  }

  private async resyncWorkflow(summary: WorkflowSummary): Promise<void> {
    const id = summary.workflowId;
    if (this.ctx.cache?.has(id)) return;
    let loaded: LoadedRuntime | null;
    try {
      loaded = await this.store.load(id, { abortSignal: this.halt.signal });
    } catch (error) {
      // A runtime that cannot be read is set aside by the next message or sweep that meets it.
      if (isJobqError(error, 'corrupt') || isJobqError(error, 'unsupported')) return;
      throw error;
    }
    if (loaded === null || loaded.runtime.corruptReason !== null || this.ctx.cache?.has(id)) return;
    if (isTerminalWorkflowStatus(loaded.runtime.status)) {
      await this.repairRows(summary, loaded.runtime);
      return;
    }
    this.rows.add(loaded.runtime, changedTasks(undefined, loaded.runtime));
    // An index row behind its runtime (its write lost with the coordinator before) is written too.
    if (summary.updatedAt !== loaded.runtime.updatedAt) this.rows.addIndex(loaded.runtime);
    this.ctx.cache?.set(id, loaded);
    this.counters.rowResyncs++;
  }

  /**
   * A save writes the blob, then the index and task rows; a row write that fails is written again
   * with the workflow's next save — but a finished workflow has no next save. When a sweep finds an
   * index row whose status differs from its runtime (and a fresh read of the row agrees), the
   * runtime is saved again as it is (conditional on its ETag), which rewrites every derived row.
   */
  private async repairRows(summary: WorkflowSummary, runtime: WorkflowRuntime): Promise<void> {
    if (runtime.status === summary.status) return;
    const op = { abortSignal: this.halt.signal };
    const row = await this.store.getWorkflow(summary.workflowId, op);
    const loaded = await this.store.load(summary.workflowId, op);
    if (row === null || loaded === null || loaded.runtime.status === row.status) return;
    const saved = await saveRuntime(this.ctx, loaded.runtime, loaded.etag, { base: loaded.runtime, cached: false, rowsKnown: false });
    this.ctx.cache?.set(summary.workflowId, { runtime: loaded.runtime, etag: saved.etag });
    this.counters.rowRepairs++;
    this.log(
      `workflow ${summary.workflowId}: its index row said ${row.status} while the runtime is ${loaded.runtime.status}; rows written again`,
    );
    if (saved.rowsError) {
      this.counters.rowsErrors++;
      this.log(`workflow ${summary.workflowId}: ${saved.rowsError.message}`);
    }
  }

  /**
   * The lost-task sweep: fails running attempts whose message must have expired or been lost (see
   * `TimeoutSweepEvent`), and cancels workflows past their deadline (`timeout_s`). It also applies
   * requests found on the index row of an active workflow that its request row does not hold
   * (recorded before request rows existed, or whose request row write failed).
   */
  private async timeoutSweep(): Promise<void> {
    for await (const summary of this.summaries({ savedStatus: ['running', 'cancelling'] })) {
      if (this.stopping.signal.aborted) return;
      await this.guard(`workflow ${summary.workflowId}`, () =>
        this.pipeline.exclusive(summary.workflowId, async () => {
          const unapplied =
            newer(summary.cancelRequestedAt, summary.cancelAppliedAt) || newer(summary.retryRequestedAt, summary.retryAppliedAt);
          if (unapplied && (await this.applyRequests(summary)).kind !== 'applied') return;
          const ttl = this.settings.taskMessageTtlInMs;
          const now = this.nowIso();
          const sweep: WorkflowEvent = {
            type: 'timeout-sweep',
            now,
            messageTtlInMs: Number.isFinite(ttl) ? ttl : null,
            graceInMs: this.settings.lostTaskGraceInMs,
          };
          const outcome = await applyEvents(this.ctx, summary.workflowId, (runtime) =>
            runtime.counts.running > 0 || deadlinePassed(runtime, now) ? [sweep] : [],
          );
          if (outcome.kind === 'applied' && outcome.saved) this.counters.timeoutSweeps++;
          else if (outcome.kind === 'applied') await this.repairRows(summary, outcome.runtime);
          else if (outcome.kind === 'corrupt') await this.setAside(summary.workflowId, outcome);
          if (outcome.kind === 'applied') await this.publishEngineCancel(summary, outcome.runtime);
        }),
      );
    }
  }

  /**
   * A cancel the engine made (a deadline that passed) is recorded in the runtime first; workers see
   * cancels on the index row, so it is then recorded there as a cancel request at the time the
   * runtime applied it (which the request scan finds already applied). Done again by every sweep
   * that finds the index row behind, so a coordinator that stopped in between loses nothing.
   */
  private async publishEngineCancel(summary: WorkflowSummary, runtime: WorkflowRuntime): Promise<void> {
    const at = runtime.cancelAppliedAt;
    if (runtime.cancelReason === null || !runtime.cancelRequested || at === null || !newer(at, summary.cancelRequestedAt)) return;
    await this.store.requestCancel(summary.workflowId, at, { abortSignal: this.halt.signal });
    this.log(`workflow ${summary.workflowId}: cancelled: ${runtime.cancelReason}`);
  }

  /** Ready-repair (docs/design.md#the-coordinator): re-dispatches `ready` tasks of workflows unchanged for the threshold. */
  private async readyRepair(): Promise<void> {
    const staleBefore = new Date(this.clock().getTime() - this.settings.readyRepairThresholdInMs).toISOString();
    for await (const summary of this.summaries({ savedStatus: ['running'], updatedBefore: staleBefore })) {
      if (this.stopping.signal.aborted) return;
      await this.guard(`workflow ${summary.workflowId}`, () =>
        this.pipeline.exclusive(summary.workflowId, async () => {
          const outcome = await applyEvents(this.ctx, summary.workflowId, (runtime) => {
            if (runtime.cancelRequested || !runtime.activated) return [];
            if (this.clock().getTime() - Date.parse(runtime.updatedAt) < this.settings.readyRepairThresholdInMs) return [];
            if (runtime.counts.ready === 0) return [];
            return [{ type: 'activate', now: this.nowIso() }];
          });
          if (outcome.kind === 'applied' && outcome.saved) {
            this.counters.readyRepairs++;
            this.log(`workflow ${summary.workflowId}: ready-repair dispatched its ready tasks`);
          } else if (outcome.kind === 'corrupt') await this.setAside(summary.workflowId, outcome);
        }),
      );
    }
  }

  private retentionOn(): boolean {
    const r = this.settings.retentionInMs;
    return r > 0 && Number.isFinite(r);
  }

  /**
   * Purges finished workflows that finished longer than `retentionInMs` ago, outputs included, at
   * most `retentionMaxPerSweep` per sweep (the rest wait for the next sweeps). The candidates come
   * from a server-side query of the index; each is re-checked on its runtime before anything is
   * deleted, so a workflow retried meanwhile is left alone.
   */
  private async retentionSweep(): Promise<void> {
    const cutoff = new Date(this.clock().getTime() - this.settings.retentionInMs).toISOString();
    let purged = 0;
    for await (const summary of this.summaries({ finishedBefore: cutoff })) {
      if (this.stopping.signal.aborted || purged >= this.settings.retentionMaxPerSweep) return;
      const id = summary.workflowId;
      await this.guard(`purge of workflow ${id}`, () =>
        this.pipeline.exclusive(id, async () => {
          await this.rows.forget(id);
          const result = await purgeWorkflow(this.store, this.ctx.outputs, id, { finishedBefore: cutoff, abortSignal: this.halt.signal });
          if (result.outcome === 'purged') {
            purged++;
            this.counters.purged++;
            this.ctx.cache?.delete(id);
            this.skipNoted.delete(id);
            this.log(
              `workflow ${id}: purged (${result.status}, finished ${result.finishedAt ?? 'at an unknown time'}, before ${cutoff}): ${result.blobs + result.outputBlobs} blob(s), ${result.taskRows} task row(s)`,
            );
          } else if (result.outcome === 'skipped' && !this.skipNoted.has(id)) {
            if (this.skipNoted.size >= MAX_SKIP_NOTES) this.skipNoted.clear();
            this.skipNoted.add(id);
            this.log(`workflow ${id}: not purged: ${result.reason ?? 'skipped'}`);
          }
        }),
      );
    }
  }
}
