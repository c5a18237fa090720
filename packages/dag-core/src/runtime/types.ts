import type { WorkflowDefinition } from '../definition/types';
import type { TaskMessageInput } from '../wire/task-message';

/** Status of one task (docs/workflow-language.md#statuses). The last five are terminal. */
export type TaskStatus = 'pending' | 'ready' | 'running' | 'completed' | 'failed' | 'upstream_failed' | 'skipped' | 'cancelled';

/**
 * Status of a workflow. `corrupt` is set only by the coordinator, for a workflow it cannot process
 * (a runtime that does not decode, an event the reducer cannot apply): terminal, with a reason, and
 * left alone until the workflow is purged.
 */
export type WorkflowStatus = 'pending' | 'running' | 'cancelling' | 'completed' | 'failed' | 'cancelled' | 'corrupt';

/** Every task status, in lifecycle order. */
export const TASK_STATUSES: readonly TaskStatus[] = [
  'pending',
  'ready',
  'running',
  'completed',
  'failed',
  'upstream_failed',
  'skipped',
  'cancelled',
];

/** Every workflow status. */
export const WORKFLOW_STATUSES: readonly WorkflowStatus[] = [
  'pending',
  'running',
  'cancelling',
  'completed',
  'failed',
  'cancelled',
  'corrupt',
];

const TERMINAL_TASK = new Set<TaskStatus>(['completed', 'failed', 'upstream_failed', 'skipped', 'cancelled']);
const TERMINAL_WORKFLOW = new Set<WorkflowStatus>(['completed', 'failed', 'cancelled', 'corrupt']);

/** True for the statuses a task never leaves (except by a workflow retry). */
export function isTerminalTaskStatus(status: TaskStatus): boolean {
  return TERMINAL_TASK.has(status);
}

/** True for the statuses a workflow never leaves (except by a retry). */
export function isTerminalWorkflowStatus(status: WorkflowStatus): boolean {
  return TERMINAL_WORKFLOW.has(status);
}

/** A parent in one of these statuses lets its children go ahead (docs/workflow-language.md#statuses). */
export function isSatisfying(status: TaskStatus): boolean {
  return status === 'completed' || status === 'skipped';
}

/** A parent in one of these statuses holds its children back for good (docs/workflow-language.md#statuses). */
export function isBlocking(status: TaskStatus): boolean {
  return status === 'failed' || status === 'upstream_failed' || status === 'cancelled';
}

/** What the runtime records of one task. Plain data. */
export interface TaskRuntime {
  status: TaskStatus;
  /** 0 until the first dispatch; the attempt most recently dispatched (or applied) after that. */
  attemptNo: number;
  /** `attemptNo` at the last workflow retry: the retry budget counts from here. */
  retryBase: number;
  /** The wire form of the output: inline JSON text or a `blob:` ref; null for none. */
  outputRef: string | null;
  error: string | null;
  /** When the coordinator last dispatched the task (the current attempt's message was sent). */
  dispatchedAt: string | null;
  /**
   * When a worker started the attempt, as its completion reported it; null while the attempt runs
   * (or was never started, or came from a worker that does not report it).
   */
  startedAt: string | null;
  completedAt: string | null;
  /** True while the task's condition waits for parent outputs fetched from blobs. */
  awaitingInputs: boolean;
  /**
   * When the queue delivers the current attempt, for a retry sent with a delay (`retry_delay_s`):
   * until then it is `running` but holds no `max_parallelism` slot, and the lost-task sweep counts
   * from here rather than from `dispatchedAt`. Null for an attempt sent without delay.
   */
  retryDueAt: string | null;
}

/** A re-run request the runtime applied (see {@link WorkflowRuntime.rerunsApplied}). */
export interface AppliedRerun {
  /** The request's id. */
  readonly id: string;
  /** When it was applied (the event's `now`). */
  readonly at: string;
}

/** Number of tasks in each status. */
export type TaskCounts = Record<TaskStatus, number>;

/**
 * The whole state of one workflow: the definition it runs and what happened so far. Immutable:
 * never mutated by {@link reduce}, which returns a new runtime sharing what did not change; stored
 * as the runtime blob through `encodeRuntime`. Build runtimes with `createRuntime`,
 * `assembleRuntime`, `withTaskStates` or `decodeRuntime`; read task states with the accessors
 * (`taskState`, `tasksIn`, …).
 */
export interface WorkflowRuntime {
  workflowId: string;
  definition: WorkflowDefinition;
  /** Container of canonical output blobs, when known: lets task messages carry only parent names. */
  outputsContainer: string | null;
  status: WorkflowStatus;
  /** False until the coordinator first activates the workflow. */
  activated: boolean;
  /** True when the latest applied request is a cancel (docs/design.md#cancel-and-retry-requests). */
  cancelRequested: boolean;
  /** `requested_at` of the last cancel request applied; later requests must be newer. */
  cancelAppliedAt: string | null;
  /** `requested_at` of the last retry request applied. */
  retryAppliedAt: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  /** Why the coordinator set the workflow aside (status `corrupt`); null otherwise. */
  corruptReason: string | null;
  /**
   * When the workflow's `timeout_s` runs out: set at its first activation (and again by a retry)
   * when the definition has one; past it the coordinator cancels the workflow. Null otherwise.
   */
  deadlineAt: string | null;
  /** Why the standing cancel was made, when the engine made it (a deadline that passed); null for a user's cancel or none. */
  cancelReason: string | null;
  /**
   * The re-run requests applied whose stored request records may still exist, with when each was
   * applied: a `rerun` event naming one of them is ignored, so each request is applied once
   * (docs/failure-model.md, "Re-running a task"). Null when there are none.
   */
  rerunsApplied: readonly AppliedRerun[] | null;
  /**
   * The W3C `traceparent` of the workflow's trace (its submit span), stored at submit when the
   * submitter traced it: the parent of every dispatch's span (docs/observability.md#tracing). Carried
   * as given, never checked here; null when untraced.
   */
  traceparent: string | null;
  /**
   * Task name → state, as a read-only record built on first read and cached per runtime object:
   * O(tasks), for tests and old callers only. Code on a hot path reads tasks through the accessors
   * (`taskState`, `taskStatus`, `tasksIn`, `changedTasks`), which cost O(1) per task they touch.
   */
  readonly tasks: Readonly<Record<string, TaskRuntime>>;
  counts: TaskCounts;
}

/** The coordinator activates a workflow (after submit, a wake-up or a restart). */
export interface ActivateEvent {
  type: 'activate';
  now: string;
}

/** A worker reports the end of an attempt (docs/design.md#which-completions-apply, docs/design.md#completion-and-wake-up-messages). */
export interface CompletionEvent {
  type: 'completion';
  now: string;
  taskName: string;
  /** null: the task's current attempt (older workers). */
  attemptNo: number | null;
  success: boolean;
  /** Wire form: inline JSON text or a `blob:` ref; never a decoded value. */
  outputRef: string | null;
  error: string | null;
  /** When the worker started the attempt (ISO-8601), when it said so. */
  startedAt?: string | null;
  /**
   * True when the failure was caused by a cancel request the worker saw. Such a failure ends the
   * task `cancelled` while the cancel stands; once a retry has lifted the cancel it re-arms the
   * task without spending its retry budget.
   */
  cancelled?: boolean;
}

/** A cancel request recorded on the index row (docs/design.md#cancel-and-retry-requests). */
export interface CancelEvent {
  type: 'cancel';
  now: string;
  /** When the request was made; defaults to `now`. Not newer than the last applied → ignored. */
  requestedAt?: string;
  /** Why, when the engine cancels (a deadline that passed): kept as the runtime's `cancelReason`. */
  reason?: string;
}

/** A retry request recorded on the index row (docs/design.md#cancel-and-retry-requests). */
export interface RetryEvent {
  type: 'retry';
  now: string;
  requestedAt?: string;
}

/**
 * A request to re-run one task — also a completed one — and, with `downstream`, every task that
 * depends on it transitively (docs/failure-model.md, "Re-running a task"). Each request has an id
 * of its own and is applied once: the runtime remembers the ids it applied
 * ({@link WorkflowRuntime.rerunsApplied}) and ignores them when they come again. A request that
 * cannot be applied (an unknown task, a task that has not run or is running, a cancel standing) is
 * still recorded as applied, with a `notice` saying why.
 */
export interface RerunEvent {
  type: 'rerun';
  now: string;
  /** The request's id, unique per request. */
  requestId: string;
  taskName: string;
  /** Also re-run every task that depends on `taskName`, transitively. */
  downstream: boolean;
  /**
   * The ids of the workflow's re-run requests still stored, as listed with this one: an applied id
   * not among them, applied more than {@link RERUN_FORGET_AFTER_MS} before `now`, is forgotten.
   * Omitted: nothing is forgotten.
   */
  recorded?: readonly string[];
}

/**
 * How long an applied re-run request is remembered after its record is no longer listed: far
 * longer than a client's write of a record can take (its time limit is 30 s), so a record written
 * late by a retried request is still recognised.
 */
export const RERUN_FORGET_AFTER_MS = 10 * 60_000;

/**
 * Periodic check for running tasks whose message was lost, and for a workflow past its deadline
 * (`deadlineAt`), which it cancels with the reason. Workers enforce `timeout_s` on the time
 * a task runs; the coordinator cannot see that time, and a dispatched task may wait in its queue
 * for as long as its message lives. So a running task with a timeout counts as lost only once
 * `now − dispatched_at` passes the message's time to live + `timeout_s` + the grace: by then its
 * message has either expired or been taken by a worker that would have stopped the task and
 * reported it. A retry sent with a delay counts from its `retryDueAt` instead (its message lives
 * that much longer, and no worker can take it before): the sweep never fires while it waits. A
 * task without a timeout is never failed by the sweep.
 */
export interface TimeoutSweepEvent {
  type: 'timeout-sweep';
  now: string;
  /** How long a task message lives in its queue; null = forever (the sweep then never fires). Default {@link DEFAULT_TASK_MESSAGE_TTL_MS}. */
  messageTtlInMs?: number | null;
  /** Room for the worker's kill grace and its completion sends. Default {@link DEFAULT_LOST_TASK_GRACE_MS}. */
  graceInMs?: number;
}

/** Default time to live of task messages: 7 days (Azure Storage Queue's own default). */
export const DEFAULT_TASK_MESSAGE_TTL_MS = 7 * 24 * 3_600_000;

/** Default grace of the lost-task sweep: 15 minutes (a worker's 10-minute kill grace, then its completion sends). */
export const DEFAULT_LOST_TASK_GRACE_MS = 15 * 60_000;

/**
 * The coordinator could not process the workflow (its stored state does not decode, or an event
 * cannot be applied): it becomes `corrupt` with the reason, and every later event is ignored.
 */
export interface CorruptEvent {
  type: 'corrupt';
  now: string;
  reason: string;
}

/** The parent outputs a condition asked for with `fetch-condition-inputs` (docs/design.md#conditions-waiting-for-outputs). */
export interface ConditionInputsEvent {
  type: 'condition-inputs';
  now: string;
  taskName: string;
  /** Parent → decoded output, for each ref that was fetched. */
  inputs: Readonly<Record<string, unknown>>;
  /** Parent → read error, for each ref that could not be fetched after retries. */
  errors: Readonly<Record<string, string>>;
}

/** Everything that moves a workflow forward. Time arrives here, never from a clock. */
export type WorkflowEvent =
  ActivateEvent | CompletionEvent | CancelEvent | RetryEvent | RerunEvent | TimeoutSweepEvent | ConditionInputsEvent | CorruptEvent;

/** Push one task message to its queue. */
export interface DispatchEffect {
  type: 'dispatch';
  taskName: string;
  queue: string;
  /** The new attempt (1 on first dispatch). */
  attemptNo: number;
  /**
   * The task message to send (docs/design.md#task-message), as `encodeTaskMessage` takes it:
   * the coordinator encodes it once, inline or with the upstream refs moved to an overflow blob.
   */
  message: TaskMessageInput;
  /** The message id inside the envelope, `{workflow_id}/{task}/{attempt}`. */
  messageId: string;
  /**
   * A retry that waits (`retry_delay_s`): send the message with this delivery delay (the queue
   * holds it back; it is due at the task's `retryDueAt`). Absent for a message to deliver at once.
   */
  delayInMs?: number;
}

/** Read these parents' blob outputs and answer with a `condition-inputs` event. */
export interface FetchConditionInputsEffect {
  type: 'fetch-condition-inputs';
  taskName: string;
  /** Parent → output ref to read. */
  refs: Record<string, string>;
}

/** The event changed nothing; the runtime returned is the one given. */
export interface IgnoredEffect {
  type: 'ignored';
  reason: string;
}

/** The event was applied but had nothing to do (a cancel of a finished workflow, a retry with nothing to retry, a re-run refused). */
export interface NoticeEffect {
  type: 'notice';
  message: string;
}

/** The workflow reached a terminal status in this call. */
export interface WorkflowFinishedEffect {
  type: 'workflow-finished';
  status: WorkflowStatus;
}

/** What the coordinator must do after a `reduce` call, in order. */
export type Effect = DispatchEffect | FetchConditionInputsEffect | IgnoredEffect | NoticeEffect | WorkflowFinishedEffect;

/** The outcome of one `reduce` call. */
export interface ReduceResult {
  runtime: WorkflowRuntime;
  effects: Effect[];
  /** The definition positions of the tasks whose state the call replaced, ascending, each once. */
  changed: number[];
}
