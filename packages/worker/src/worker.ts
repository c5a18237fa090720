import { decodeEnvelope, decodeWorkflowTask, type Envelope, type EnvelopeTrace } from '@jobq/dag-core/wire';
import type { Attributes } from '@opentelemetry/api';
import {
  errorMessage,
  clockTimeout,
  envValue,
  isJobqError,
  JobqError,
  noopInstruments,
  realClock,
  resolveSettings,
  type Clock,
  type ResolvedSettings,
  type SettingDefaults,
  type SettingRanges,
  type Instruments,
  type ReceivedMessage,
  type TaskQueue,
} from '@jobq/ports';
import { Backoff, sleep } from './backoff';
import { prefixedLog, stderrLog, type LogLine, type TaskLineSink, type TaskRef } from './log';
import { type LongTimer, setLongTimeout } from './long-timer';
import type { ProcessOutcome, Processor, TaskContext } from './processor';
import { DEFAULT_HEARTBEAT_INTERVAL_IN_MS, Heartbeat, type WorkerHeartbeatOptions } from './heartbeat';
import { endSpan, envelopeTraceOf, remoteSpanContext, startProcessSpan } from '@jobq/ports';

/** Options of {@link Worker}. */
export interface WorkerOptions {
  queue: TaskQueue;
  /** Asked in order; the first whose `accepts(kwargs)` is true runs the message. */
  processors: readonly Processor[];
  /** Concurrent slots, each holding at most one message (default 1). */
  numWorkers?: number;
  /**
   * Cap of the empty-queue back-off, which starts at 100 ms and doubles with each empty receive
   * (default 30 s); a message received or a task ending sets it back to 100 ms.
   */
  maxIdleBackoffInMs?: number;
  /** `run()` resolves after this long without a message and with no task running (default: never). */
  idleTimeoutInMs?: number | null;
  /** After `stop()`, how long running tasks may still finish (default 30 s). */
  gracePeriodInMs?: number;
  /** Renew a held lock every `lockDurationInMs × renewEveryFraction` (default 0.5). */
  renewEveryFraction?: number;
  /** Worker log lines (default: stderr). Task lines come prefixed with `[envelope.id] `. */
  log?: LogLine;
  /**
   * Lines about one task, with the task they are about (its name and attempt for a workflow
   * task): what the task printed on stdout/stderr and the worker's own lines about it (started,
   * done, retrying, …). Default: the worker log, each line prefixed with `[envelope.id] `.
   */
  taskLines?: TaskLineSink;
  /** How long one receive call waits for a message (default 1 s). */
  receiveWaitInMs?: number;
  /**
   * The delivery bound (`JOBQ_MAX_DELIVERIES`, default {@link DEFAULT_MAX_DELIVERIES}): a message
   * delivered more often is dead-lettered with its reason instead of being run, and one left
   * (`leave`) or failed at this delivery is dead-lettered then. Before that, the processor that
   * accepted it gets {@link Processor.giveUp}.
   */
  maxDeliveries?: number;
  /**
   * The time of the loop: receive back-off, the idle timeout, lock renewals, the stop grace
   * period, settlement retries (default the real clock; tests hand in a `VirtualClock`). The
   * processors take their own.
   */
  clock?: Clock;
  /** Where the worker's metrics go (docs/metrics.md; default: nowhere). */
  instruments?: Instruments;
  /** The `queue` label of its metrics (default the queue's name; the app passes the queue spec, as the coordinator's dispatches carry it). */
  queueLabel?: string;
  /**
   * Heartbeats (docs/design.md#worker-heartbeats): the worker's row in this registry is written at
   * start and every interval, and deleted when `run()` ends. Default: none.
   */
  heartbeat?: WorkerHeartbeatOptions;
}

/** Default of {@link WorkerOptions.maxDeliveries} (`JOBQ_MAX_DELIVERIES`). */
export const DEFAULT_MAX_DELIVERIES = 20;

/** Defaults of the {@link WorkerOptions} settings (documented there). */
export const WORKER_DEFAULTS: SettingDefaults<WorkerOptions> = {
  numWorkers: 1,
  maxIdleBackoffInMs: 30_000,
  idleTimeoutInMs: null,
  gracePeriodInMs: 30_000,
  renewEveryFraction: 0.5,
  receiveWaitInMs: 1_000,
  maxDeliveries: DEFAULT_MAX_DELIVERIES,
};

/** The worker's settings: {@link WorkerOptions} resolved over {@link WORKER_DEFAULTS}. */
type WorkerSettings = ResolvedSettings<typeof WORKER_DEFAULTS>;

/** How given {@link WorkerOptions} are brought into range or refused. */
const WORKER_RANGES: SettingRanges<WorkerSettings> = {
  numWorkers: { integer: true, min: 1 },
  maxIdleBackoffInMs: { min: 1 },
  gracePeriodInMs: { min: 0 },
  renewEveryFraction: (fraction) => {
    if (!(fraction > 0 && fraction < 1)) throw new RangeError(`renewEveryFraction must be between 0 and 1 (exclusive), got ${fraction}`);
    return fraction;
  },
  receiveWaitInMs: { min: 0 },
  maxDeliveries: (maxDeliveries) => {
    if (!(Number.isSafeInteger(maxDeliveries) && maxDeliveries >= 1))
      throw new RangeError(`maxDeliveries must be an integer ≥ 1, got ${maxDeliveries}`);
    return maxDeliveries;
  },
};

/** Reads `JOBQ_MAX_DELIVERIES` (an integer ≥ 1; unset or empty → 20); anything else is an `invalid-config` error. */
export function maxDeliveriesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const text = envValue(env, 'JOBQ_MAX_DELIVERIES');
  if (text === null) return DEFAULT_MAX_DELIVERIES;
  if (!/^[1-9]\d{0,8}$/.test(text))
    throw new JobqError('invalid-config', `JOBQ_MAX_DELIVERIES must be an integer from 1 to 999999999, got "${text}"`);
  return Number(text);
}

/** What {@link Worker.run} did. Each delivery counts once in `processed`. */
export interface WorkerSummary {
  /** Deliveries taken from the queue and handled (poison and unrunnable ones included). */
  processed: number;
  /** Tasks whose processor returned `done` (and whose message was then completed). */
  succeeded: number;
  /** Tasks whose processor returned `failed` or threw (retried or dead-lettered). */
  failed: number;
  /** Messages moved to the dead-letter queue: poison, no processor, retries used up, or the delivery bound reached. */
  deadLettered: number;
  /** Tasks whose processor returned `leave` (redelivered after the lock ends). */
  left: number;
  /** Messages given back for another delivery: a retry of a failed task, or a task stopped by shutdown. */
  abandoned: number;
  /** Tasks whose lock was lost while running: their outcome was dropped, nothing settled. */
  lockLost: number;
}

/** A {@link Worker}'s state for the health endpoints. */
export interface WorkerHealth {
  stopping: boolean;
  /** When the receive loop last went round (clock ms). */
  lastTickAt: number;
  /** When a receive last succeeded (ISO), null before the first. */
  lastReceiveAt: string | null;
  /** The error of the last receive, null when it succeeded (or none was made yet). */
  lastReceiveError: string | null;
  slots: number;
  busy: number;
}

/** Options of {@link Worker.stop}. */
export interface StopOptions {
  /** Overrides the worker's grace period for this stop (0 = abort running tasks now). */
  gracePeriodInMs?: number;
}

interface RunningTask {
  readonly controller: AbortController;
  graceTimer?: LongTimer;
  graceDeadline?: number;
}

interface Renewer {
  readonly lost: boolean;
  stop(): Promise<void>;
}

/** `text` on one line (a dead-letter reason is one line). */
function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** Error codes that no amount of waiting fixes: `run()` stops and rejects with them. */
const FATAL_RECEIVE_CODES = new Set(['auth', 'invalid-config', 'not-found', 'invalid-argument']);

/** Messages one receive call asks for at most (the Storage Queue limit). */
const MAX_RECEIVE_PER_CALL = 32;

/** Sleeps `ms`, or less when `signal` fires or one of `tasks` settles; the timer never outlives the call. */
async function sleepUntilFirst(clock: Clock, ms: number, signal: AbortSignal, tasks: Iterable<Promise<void>>): Promise<void> {
  const wake = new AbortController();
  const onAbort = () => wake.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await Promise.race([sleep(ms, { signal: wake.signal, clock }), ...tasks]);
  } finally {
    wake.abort();
    signal.removeEventListener('abort', onAbort);
  }
}

/** How long a worker with fewer than half its slots free waits for more to free up before it receives. */
const RECEIVE_GATHER_IN_MS = 20;

/** The attributes of a delivery's span: the message, and the workflow task it runs when it is one. */
function processAttributes(message: ReceivedMessage, envelope: Envelope): Attributes {
  const attributes: Attributes = { 'messaging.message.id': envelope.id, 'messaging.message.delivery_count': message.deliveryCount };
  const { __workflow_id: workflowId, __workflow_task: task, __attempt_no: attempt } = envelope.kwargs;
  if (typeof workflowId === 'string') attributes['jobq.workflow.id'] = workflowId;
  if (typeof task === 'string') attributes['jobq.task'] = task;
  if (typeof attempt === 'number') attributes['jobq.attempt'] = attempt;
  return attributes;
}

/**
 * The jobq pull loop. One receive loop fills `numWorkers` slots (each call asks for as many
 * messages as slots are free, so no message waits under a lock for a busy slot); each slot decodes
 * the envelope, hands it to the first processor that accepts it, renews its lock in the background,
 * and, once the task has run, takes the next message while this one is settled in the background
 * (at most `2 × numWorkers` messages between receive and settlement) from the outcome:
 * - `done` → complete; `failed` (or a throw) → abandon while `deliveryCount <= num_retries`, else
 *   dead-letter with the error; `leave` → nothing (redelivered when the lock ends);
 * - a body that is not an envelope, or one no processor accepts, is dead-lettered at once;
 * - the delivery bound `maxDeliveries` (N): a message delivered more than N times is not run, and
 *   one left or failed at delivery N is not delivered again: the processor's `giveUp` hook runs
 *   (the workflow processor reports a failure), then the message is dead-lettered with the reason;
 * - a lost lock aborts the task's signal with reason `'lock-lost'` and drops its outcome;
 * - `stop()` takes no new work; tasks still running after the grace period get their signal
 *   aborted with reason `'shutdown'`, and their messages are abandoned (no retry is spent) unless
 *   the processor still returns `done` (completed) or `leave`. The worker waits for the processor
 *   to return (the shell and workflow processors' child gets SIGTERM, then SIGKILL after their
 *   shutdown kill timeout; docs/operations.md#draining-a-worker).
 */
export class Worker {
  private readonly queue: TaskQueue;
  private readonly processors: readonly Processor[];
  private readonly settings: WorkerSettings;
  private readonly log: LogLine;
  private readonly taskLines: TaskLineSink | null;
  private readonly clock: Clock;
  private readonly instruments: Instruments;
  private readonly queueLabel: string;

  private summary: WorkerSummary = { processed: 0, succeeded: 0, failed: 0, deadLettered: 0, left: 0, abandoned: 0, lockLost: 0 };
  private readonly stopController = new AbortController();
  private readonly tasks = new Set<RunningTask>();
  private stopGraceInMs: number | null = null;
  private stopRequestedAt = 0;
  private lastActivity: number;
  private active = 0;
  private fatal: Error | undefined;
  private finished: Promise<void> | undefined;
  private readonly heartbeat: Heartbeat | null;
  private readonly queueSpec: string;
  /** Each running task's envelope id (`{workflow_id}/{task}/{attempt}` for workflow tasks) and start, for the heartbeat. */
  private readonly runningIds = new Map<RunningTask, { id: string; since: string }>();
  private lastReceiveAt: string | null = null;
  /** When the receive loop last went round (clock ms), and whether its last receive failed. */
  private lastTickAt: number;
  private lastReceiveError: string | null = null;

  constructor(options: WorkerOptions) {
    this.queue = options.queue;
    this.processors = options.processors;
    this.settings = resolveSettings<WorkerSettings>(WORKER_DEFAULTS, options, WORKER_RANGES);
    this.log = options.log ?? stderrLog;
    this.taskLines = options.taskLines ?? null;
    this.clock = options.clock ?? realClock;
    this.instruments = options.instruments ?? noopInstruments;
    this.queueLabel = options.queueLabel ?? options.queue.name;
    this.lastActivity = this.clock.now();
    this.lastTickAt = this.lastActivity;
    const beat = options.heartbeat;
    const interval = beat?.intervalInMs ?? DEFAULT_HEARTBEAT_INTERVAL_IN_MS;
    this.queueSpec = beat?.queueSpec ?? this.queue.name;
    this.heartbeat =
      beat === undefined || !(interval > 0)
        ? null
        : new Heartbeat(
            beat.registry,
            interval,
            this.clock,
            () => this.heartbeatSnapshot(),
            this.log,
            beat.version ?? 'unknown',
            beat.workerId,
          );
  }

  /** The row id of this worker's heartbeat (null without heartbeats). */
  get workerId(): string | null {
    return this.heartbeat?.workerId ?? null;
  }

  private heartbeatSnapshot() {
    return {
      stopping: this.stopping,
      queues: [{ queue: this.queueSpec, slots: this.settings.numWorkers, busy: this.active, lastReceiveAt: this.lastReceiveAt }],
      running: [...this.runningIds.values()],
    };
  }

  /**
   * What the health endpoints report (docs/operations.md#health-endpoints): whether it is stopping,
   * when its receive loop last went round (clock ms; it waits without going round while every
   * slot is busy), and whether its last receive succeeded (false before the first one).
   */
  health(): WorkerHealth {
    return {
      stopping: this.stopping,
      lastTickAt: this.lastTickAt,
      lastReceiveAt: this.lastReceiveAt,
      lastReceiveError: this.lastReceiveError,
      slots: this.settings.numWorkers,
      busy: this.active,
    };
  }

  /** Sets the slot gauges (`active` changed). */
  private recordSlots(): void {
    this.instruments.set('jobq_worker_slots_busy', { queue: this.queueLabel }, this.active);
  }

  /** True once `stop()` was called or the idle timeout passed. */
  get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /**
   * Pulls and runs messages until `stop()` or the idle timeout. Rejects only when receiving fails
   * with an error that waiting cannot fix (`auth`, `invalid-config`, `not-found`), after the
   * running tasks ended; transient errors are logged and retried with back-off.
   */
  async run(): Promise<WorkerSummary> {
    if (this.finished) throw new Error('Worker.run() was already called; make a new Worker');
    this.lastActivity = this.clock.now();
    this.instruments.set('jobq_worker_slots', { queue: this.queueLabel }, this.settings.numWorkers);
    this.recordSlots();
    this.heartbeat?.start();
    this.finished = this.feedLoop()
      .finally(() => this.closeProcessors())
      .finally(() => this.heartbeat?.stop(true));
    await this.finished;
    if (this.fatal !== undefined) throw this.fatal;
    return { ...this.summary };
  }

  /**
   * Graceful stop: no new work; running tasks get the grace period, then their signal aborts with
   * reason `'shutdown'` and their messages are abandoned. Resolves when `run()` has ended (at once
   * when it was never started). Calling it again may only shorten the grace.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    const grace = Math.max(0, options.gracePeriodInMs ?? this.settings.gracePeriodInMs);
    if (!this.stopping) {
      this.stopRequestedAt = this.clock.now();
      this.log(
        `stopping: no new work${this.tasks.size > 0 ? `; ${this.tasks.size} running task(s) get ${Math.round(grace / 1000)}s to finish` : ''}`,
      );
      this.stopController.abort('stop');
      // Tell at once that this worker takes no new work (it may still run tasks for a while).
      if (this.tasks.size > 0) this.heartbeat?.poke();
    }
    if (this.stopGraceInMs === null || grace < this.stopGraceInMs) this.stopGraceInMs = grace;
    for (const task of this.tasks) this.armGrace(task);
    if (this.finished) await this.finished;
  }

  /**
   * SIGTERM and SIGINT → `stop()`; a second SIGINT aborts the running tasks at once (grace 0).
   * Returns a function that removes the handlers.
   */
  installSignalHandlers(): () => void {
    let interrupts = 0;
    const report = (error: unknown) => this.log(`stop failed: ${errorMessage(error)}`);
    const onTerm = () => {
      this.log('SIGTERM received');
      this.stop().catch(report);
    };
    const onInt = () => {
      interrupts++;
      if (interrupts === 1) {
        this.log('SIGINT received (press Ctrl-C again to abort running tasks now)');
        this.stop().catch(report);
      } else {
        this.log('second SIGINT: aborting running tasks');
        this.stop({ gracePeriodInMs: 0 }).catch(report);
      }
    };
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    return () => {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
    };
  }

  private armGrace(task: RunningTask): void {
    if (this.stopGraceInMs === null || task.controller.signal.aborted) return;
    const deadline = this.stopRequestedAt + this.stopGraceInMs;
    if (task.graceDeadline !== undefined && task.graceDeadline <= deadline) return;
    task.graceTimer?.clear();
    task.graceDeadline = deadline;
    // Not unref'd: the abort must happen even if the task holds nothing else open.
    task.graceTimer = setLongTimeout(() => task.controller.abort('shutdown'), Math.max(0, deadline - this.clock.now()), this.clock);
  }

  /** `settling`: messages not settled yet (a worker that still settles one is not idle). */
  private idleExpired(settling: number): boolean {
    return (
      this.settings.idleTimeoutInMs !== null &&
      this.active === 0 &&
      settling === 0 &&
      this.clock.now() - this.lastActivity >= this.settings.idleTimeoutInMs
    );
  }

  /** Lets each processor release what it holds between tasks (no task runs any more). */
  private async closeProcessors(): Promise<void> {
    for (const processor of this.processors) {
      try {
        await processor.close?.();
      } catch (error) {
        this.log(`processor "${processor.name}" could not close: ${errorMessage(error)}`);
      }
    }
  }

  /**
   * One receive loop feeds every slot: each call asks for as many messages as there are free slots
   * (at most {@link MAX_RECEIVE_PER_CALL}), so a busy worker takes its work in a few calls instead of
   * one per task, and an idle worker polls once per back-off step however many slots it has.
   */
  private async feedLoop(): Promise<void> {
    const backoff = new Backoff(100, this.settings.maxIdleBackoffInMs);
    const signal = this.stopController.signal;
    // A slot's promise settles when its task has run (`running`); the message is settled after
    // that, in the background (`settling`: each message from receive to settlement).
    const running = new Set<Promise<void>>();
    const settling = new Set<Promise<void>>();
    while (!this.stopping) {
      this.lastTickAt = this.clock.now();
      if (this.active >= this.settings.numWorkers || settling.size >= 2 * this.settings.numWorkers) {
        await Promise.race([...running, ...settling]);
        continue;
      }
      const fewFree = () => this.active > 0 && this.settings.numWorkers - this.active < Math.ceil(this.settings.numWorkers / 2);
      if (fewFree()) {
        // A slot just freed while others still run: give the others a moment to finish too, so one
        // receive call fetches work for several slots (a few ms against one transaction per slot).
        const until = this.clock.now() + RECEIVE_GATHER_IN_MS;
        while (!this.stopping && fewFree() && this.clock.now() < until) {
          await sleepUntilFirst(this.clock, Math.max(1, until - this.clock.now()), signal, running);
        }
      }
      const free = Math.min(this.settings.numWorkers - this.active, MAX_RECEIVE_PER_CALL);
      let messages: ReceivedMessage[];
      try {
        messages = await this.queue.receive({ maxMessages: free, maxWaitTimeInMs: this.settings.receiveWaitInMs, abortSignal: signal });
        this.lastReceiveAt = new Date(this.clock.now()).toISOString();
        this.lastTickAt = this.clock.now();
        this.lastReceiveError = null;
      } catch (error) {
        if (this.stopping) break;
        this.lastTickAt = this.clock.now();
        this.lastReceiveError = errorMessage(error);
        this.instruments.inc('jobq_worker_receive_errors_total', {
          queue: this.queueLabel,
          code: isJobqError(error) ? error.code : 'unknown',
        });
        if (isJobqError(error) && FATAL_RECEIVE_CODES.has(error.code)) {
          this.log(`receive from queue "${this.queue.name}" failed: ${errorMessage(error)}; stopping`);
          this.fatal ??= error;
          void this.stop();
          break;
        }
        const delay = backoff.next();
        this.log(`receive from queue "${this.queue.name}" failed: ${errorMessage(error)}; retrying in ${delay} ms`);
        await sleep(delay, { signal, clock: this.clock });
        continue;
      }
      if (messages.length === 0) {
        if (this.idleExpired(settling.size)) {
          if (!this.stopping) {
            this.log(`idle for ${Math.round((this.settings.idleTimeoutInMs ?? 0) / 1000)}s: stopping`);
            this.stopController.abort('idle');
          }
          break;
        }
        // With tasks running, a slot that frees up ends the wait early.
        let delay = backoff.next();
        if (this.settings.idleTimeoutInMs !== null)
          delay = Math.min(delay, Math.max(1, this.lastActivity + this.settings.idleTimeoutInMs - this.clock.now()));
        await sleepUntilFirst(this.clock, delay, signal, running);
        continue;
      }
      backoff.reset();
      for (const message of messages) {
        this.active++;
        this.recordSlots();
        this.lastActivity = this.clock.now();
        let freeSlot!: () => void;
        const slot = new Promise<void>((resolve) => (freeSlot = resolve));
        let released = false;
        const release = () => {
          if (released) return;
          released = true;
          this.active--;
          this.recordSlots();
          this.lastActivity = this.clock.now();
          running.delete(slot);
          // A task just ended: its children are about to be dispatched, so the next receive goes
          // out at once and an empty one waits the shortest back-off; it grows again only while
          // receives stay empty.
          backoff.reset();
          freeSlot();
        };
        const whole: Promise<void> = this.handle(message, release)
          .catch((error: unknown) => {
            // handle() catches everything it expects; this is a bug guard so the loop never dies.
            this.log(`internal error handling message ${message.messageId}: ${errorMessage(error)}`);
          })
          .finally(() => {
            release();
            this.lastActivity = this.clock.now();
            settling.delete(whole);
          });
        running.add(slot);
        settling.add(whole);
      }
    }
    await Promise.all(settling);
  }

  /** Runs one message and settles it; `release` frees its slot once the task has run (before the settlement). */
  private async handle(message: ReceivedMessage, release: () => void): Promise<void> {
    this.summary.processed++;
    const decoded = decodeEnvelope(message.body);
    if (!decoded.ok) {
      const reason = `poison message (not a jobq envelope): ${decoded.error}`;
      this.log(`message ${message.messageId}: ${reason}; dead-lettering`);
      if (await this.settle(message, 'dead-letter', () => this.queue.deadLetter(message, reason))) this.summary.deadLettered++;
      return;
    }
    const envelope = decoded.value;
    const { taskLog, output } = this.taskSinks(envelope);
    const processor = this.processors.find((p) => {
      try {
        return p.accepts(envelope.kwargs);
      } catch {
        return false;
      }
    });
    if (!processor) {
      const reason = `no processor accepts this task (kwargs keys: ${Object.keys(envelope.kwargs).join(', ') || 'none'}; processors: ${this.processors.map((p) => p.name).join(', ') || 'none'})`;
      taskLog(`${reason}; dead-lettering`);
      if (await this.settle(message, 'dead-letter', () => this.queue.deadLetter(message, reason))) this.summary.deadLettered++;
      return;
    }
    // The delivery's span: a child of the sender's, linked to it (docs/observability.md#tracing).
    const span = startProcessSpan(
      remoteSpanContext(envelope.traceparent, envelope.tracestate),
      this.queueLabel,
      this.queue.name,
      processAttributes(message, envelope),
    );
    let error: string | null = null;
    try {
      error = await this.runTask(message, envelope, processor, taskLog, output, release, envelopeTraceOf(span));
    } catch (thrown) {
      error = errorMessage(thrown);
      throw thrown;
    } finally {
      endSpan(span, error);
    }
  }

  /** The worker's lines about a task and the lines the task prints: to `taskLines`, else to the log prefixed with the task id. */
  private taskSinks(envelope: Envelope): { taskLog: LogLine; output: (stream: 'stdout' | 'stderr', line: string) => void } {
    const sink = this.taskLines;
    if (sink === null) {
      const taskLog = prefixedLog(this.log, envelope.id);
      return { taskLog, output: (_stream, line) => taskLog(line) };
    }
    const decoded = decodeWorkflowTask(envelope.kwargs);
    const info = decoded.ok ? decoded.value : null;
    const task: TaskRef = {
      id: envelope.id,
      workflowTask: info === null ? null : { workflowId: info.workflowId, taskName: info.taskName, attemptNo: info.attemptNo },
    };
    return {
      taskLog: (text) => sink({ task, stream: null, text }),
      output: (stream, text) => sink({ task, stream, text }),
    };
  }

  private async runTask(
    message: ReceivedMessage,
    envelope: Envelope,
    processor: Processor,
    taskLog: LogLine,
    output: (stream: 'stdout' | 'stderr', line: string) => void,
    release: () => void,
    trace: EnvelopeTrace | undefined,
  ): Promise<string | null> {
    const task: RunningTask = { controller: new AbortController() };
    this.tasks.add(task);
    this.runningIds.set(task, { id: envelope.id, since: new Date(this.clock.now()).toISOString() });
    if (this.stopping) this.armGrace(task);
    const renewer = this.startRenewer(message, task.controller, taskLog);
    const context: TaskContext = {
      message,
      envelope,
      signal: task.controller.signal,
      log: taskLog,
      output,
      instruments: this.instruments,
      queueLabel: this.queueLabel,
      ...(trace === undefined ? {} : { trace }),
    };
    let outcome: ProcessOutcome;
    // Set when the delivery bound ends this message: it is dead-lettered with this reason.
    let givenUp: string | null = null;
    try {
      if (message.deliveryCount > this.settings.maxDeliveries) {
        givenUp = `gave up after ${message.deliveryCount} deliveries: the limit is ${this.settings.maxDeliveries} (JOBQ_MAX_DELIVERIES)`;
        taskLog(`delivery ${message.deliveryCount}: not run, over the delivery limit`);
        outcome = { kind: 'leave', reason: givenUp };
      } else {
        taskLog(`started (${processor.name}, delivery ${message.deliveryCount})`);
        const started = this.clock.now();
        if (message.enqueuedAt !== null) {
          this.instruments.observe(
            'jobq_worker_task_queue_wait_seconds',
            { queue: this.queueLabel },
            Math.max(0, started - message.enqueuedAt.getTime()) / 1000,
          );
        }
        try {
          outcome = await processor.process(context);
        } catch (error) {
          outcome = { kind: 'failed', error: `processor "${processor.name}" threw: ${errorMessage(error)}` };
        }
        // A workflow task that failed is `done` for the message (its failure went out as a completion) but `failed` for the metric.
        const measured = outcome.kind === 'done' && outcome.failed === true ? 'failed' : outcome.kind;
        this.instruments.observe(
          'jobq_worker_task_duration_seconds',
          { queue: this.queueLabel, outcome: measured },
          Math.max(0, this.clock.now() - started) / 1000,
        );
        // A task left at the last allowed delivery is not run again. (Not when we stopped it
        // ourselves: a lost lock or a shutdown is not the message's fault.)
        if (
          outcome.kind === 'leave' &&
          message.deliveryCount >= this.settings.maxDeliveries &&
          !task.controller.signal.aborted &&
          !this.stopping
        ) {
          givenUp = `gave up after ${message.deliveryCount} deliveries: ${outcome.reason}`;
        }
      }
      if (givenUp !== null) {
        givenUp = oneLine(givenUp);
        if (processor.giveUp && !task.controller.signal.aborted) {
          try {
            await processor.giveUp(context, givenUp);
          } catch (error) {
            taskLog(`processor "${processor.name}" could not report giving up: ${errorMessage(error)}`);
          }
        }
      }
    } finally {
      task.graceTimer?.clear();
      this.tasks.delete(task);
      this.runningIds.delete(task);
      // The task has run: its slot takes the next message while this one is settled.
      release();
    }
    // Stop renewing before settling: on Storage Queues a renewal changes the pop receipt, so a
    // renewal racing a settlement would make the settlement fail. An in-flight renewal is awaited.
    await renewer.stop();
    if (renewer.lost || task.controller.signal.reason === 'lock-lost') {
      taskLog(`lock lost: outcome "${outcome.kind}" dropped; the message may already be with another worker`);
      this.summary.lockLost++;
      return 'lock lost';
    }
    if (givenUp !== null) {
      const reason = givenUp;
      taskLog(`${reason}; dead-lettering`);
      if (await this.settle(message, 'dead-letter', () => this.queue.deadLetter(message, reason), taskLog)) this.summary.deadLettered++;
      return reason;
    }
    if (outcome.kind === 'leave') {
      taskLog(`left for redelivery: ${outcome.reason}`);
      this.summary.left++;
      return null;
    }
    if (outcome.kind === 'failed' && task.controller.signal.reason === 'shutdown') {
      // Stopped by us, not failed on its own: give it back without spending a retry. (A task that
      // still returned `done` after the abort finished its work, so it is completed below.)
      taskLog(`stopped by shutdown (${outcome.error}); abandoning the message`);
      if (await this.settle(message, 'abandon', () => this.queue.abandon(message), taskLog)) this.summary.abandoned++;
      return null;
    }
    if (outcome.kind === 'done') {
      this.summary.succeeded++;
      taskLog('done');
      await this.settle(message, 'complete', () => this.queue.complete(message), taskLog);
      return null;
    }
    this.summary.failed++;
    if (message.deliveryCount <= envelope.numRetries && message.deliveryCount < this.settings.maxDeliveries) {
      taskLog(`failed: ${outcome.error}; retrying (delivery ${message.deliveryCount} of ${envelope.numRetries + 1})`);
      if (await this.settle(message, 'abandon', () => this.queue.abandon(message), taskLog)) this.summary.abandoned++;
    } else {
      taskLog(`failed: ${outcome.error}; dead-lettering after ${message.deliveryCount} deliveries`);
      const reason =
        message.deliveryCount <= envelope.numRetries
          ? oneLine(`${outcome.error} (the delivery limit ${this.settings.maxDeliveries} was reached)`)
          : outcome.error;
      if (await this.settle(message, 'dead-letter', () => this.queue.deadLetter(message, reason), taskLog)) this.summary.deadLettered++;
    }
    return outcome.error;
  }

  /**
   * Runs one settlement call, retrying transient errors with back-off while the lock may still be
   * held. A lost lock is logged and reported as false (the message comes back on its own).
   */
  private async settle(message: ReceivedMessage, what: string, call: () => Promise<void>, log: LogLine = this.log): Promise<boolean> {
    const backoff = new Backoff(200, 5_000);
    for (;;) {
      try {
        await call();
        return true;
      } catch (error) {
        if (isJobqError(error, 'lock-lost')) {
          log(`could not ${what} message ${message.messageId}: the lock was lost (it will be delivered again)`);
          return false;
        }
        const retryable = !isJobqError(error) || error.retryable;
        const delay = backoff.next();
        if (!retryable || this.clock.now() + delay >= message.lockedUntil.getTime()) {
          log(`could not ${what} message ${message.messageId}: ${errorMessage(error)} (it will be delivered again)`);
          return false;
        }
        log(`${what} of message ${message.messageId} failed: ${errorMessage(error)}; retrying in ${delay} ms`);
        await sleep(delay, { clock: this.clock });
      }
    }
  }

  /**
   * Renews the lock every `lockDurationInMs × renewEveryFraction`. A `lock-lost` answer, or failures
   * until the lock has ended, abort the task with reason `'lock-lost'`. Timers are unref'd.
   */
  private startRenewer(message: ReceivedMessage, controller: AbortController, log: LogLine): Renewer {
    const interval = Math.max(20, Math.floor(this.queue.lockDurationInMs * this.settings.renewEveryFraction));
    let lost = false;
    let stopped = false;
    let timer: LongTimer | undefined;
    let inflight: Promise<void> = Promise.resolve();

    const loseLock = (why: string) => {
      lost = true;
      log(`lock lost (${why}): stopping the task`);
      controller.abort('lock-lost');
    };
    const schedule = (delay: number) => {
      if (stopped) return;
      timer = setLongTimeout(tick, delay, this.clock).unref();
    };
    const renewOnce = async () => {
      if (stopped) return;
      const left = message.lockedUntil.getTime() - this.clock.now();
      const limit = clockTimeout(this.clock, Math.max(500, left));
      try {
        await this.queue.renewLock(message, { abortSignal: limit.signal });
        schedule(interval);
      } catch (error) {
        if (stopped) return;
        if (isJobqError(error, 'lock-lost')) return loseLock(errorMessage(error));
        const remaining = message.lockedUntil.getTime() - this.clock.now();
        if (remaining <= 0) return loseLock(`renewal failing until the lock ended: ${errorMessage(error)}`);
        log(`lock renewal failed: ${errorMessage(error)}; retrying`);
        schedule(Math.max(50, Math.min(interval, Math.floor(remaining / 4))));
      } finally {
        limit.clear();
      }
    };
    const tick = () => {
      inflight = renewOnce();
    };
    schedule(interval);
    return {
      get lost() {
        return lost;
      },
      async stop() {
        stopped = true;
        timer?.clear();
        // An in-flight renewal is awaited, not aborted: its answer carries the new pop receipt.
        await inflight;
      },
    };
  }
}
