import type { Envelope, EnvelopeTrace } from '@jobq/dag-core/wire';
import type { Instruments, ReceivedMessage } from '@jobq/ports';

/** What a processor is given for one delivery of a task message. */
export interface TaskContext {
  /** The leased message (its lock is renewed in the background while the processor runs). */
  readonly message: ReceivedMessage;
  /** The decoded envelope (docs/design.md#envelope): `id`, `kwargs`, `numRetries`. */
  readonly envelope: Envelope;
  /**
   * Fires when the work must stop: the lock was lost (another worker may have the message now),
   * or the worker is shutting down and the grace period is over. `signal.reason` says which.
   */
  readonly signal: AbortSignal;
  /** Writes a line to the worker log, prefixed with the task id. */
  log(line: string): void;
  /**
   * Writes one line the task itself printed on its stdout or stderr (the worker routes it to
   * `WorkerOptions.taskLines`, else to its log like {@link log}). Processors fall back to `log`
   * when a context has none.
   */
  output?(stream: 'stdout' | 'stderr', line: string): void;
  /**
   * The trace context of the worker's `process {queue}` span for this delivery, when it is recorded
   * and sampled (docs/observability.md#tracing): the task gets it as `TRACEPARENT`/`TRACESTATE`,
   * and the completion carries it. Absent without tracing.
   */
  readonly trace?: EnvelopeTrace;
  /** Where the worker records its metrics (docs/metrics.md), for what only the processor sees (a failed task-log upload). */
  readonly instruments?: Instruments;
  /** The `queue` label of those metrics. */
  readonly queueLabel?: string;
}

/** What the worker does with the message after the processor returns. */
export type ProcessOutcome =
  /**
   * Delete the message: the task is done (for a workflow task: its completion was published).
   * `failed: true` when the task ran and failed all the same (a workflow task whose failure went
   * to the coordinator as a completion): the message is deleted, and metrics say `failed`.
   */
  | { kind: 'done'; failed?: boolean }
  /** A plain task failed: deliver it again while `num_retries` allows, then dead-letter it. */
  | { kind: 'failed'; error: string }
  /** Do not settle the message: it is delivered again when its lock expires. */
  | { kind: 'leave'; reason: string };

/**
 * Runs task messages. The worker asks each processor in turn whether it takes a message (the
 * workflow processor takes kwargs with `__workflow_id`; the shell processor takes the rest), then
 * hands it the message. Plug in your own for tasks that are not shell commands.
 */
export interface Processor {
  readonly name: string;
  /** True when this processor runs messages with these kwargs. */
  accepts(kwargs: Readonly<Record<string, unknown>>): boolean;
  /** Runs the task. Must return (not throw) for task failures; a throw counts as a failure too. */
  process(context: TaskContext): Promise<ProcessOutcome>;
  /**
   * Called when the worker gives up on a message this processor accepted, just before it is
   * dead-lettered: it was delivered more than `maxDeliveries` times, or `process` left it at the
   * last allowed delivery. `reason` is one line (`gave up after N deliveries: …`). A chance to
   * report the task as failed to whoever waits for it (the workflow processor sends a failure
   * completion). The lock is still held and renewed; a throw is logged and ignored.
   */
  giveUp?(context: TaskContext, reason: string): Promise<void>;
  /**
   * Called once `Worker.run()` has no task running any more, before it returns: release what the
   * processor holds between tasks (the workflow processor removes its tasks' working directories).
   * A throw is logged and ignored.
   */
  close?(): Promise<void>;
}
