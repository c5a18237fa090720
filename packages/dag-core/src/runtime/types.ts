import type { WorkflowDefinition } from '../definition/types';

/** Status of one task (SPEC §3.1). The last five are terminal. */
export type TaskStatus = 'pending' | 'ready' | 'running' | 'completed' | 'failed' | 'upstream_failed' | 'skipped' | 'cancelled';

/** Status of a workflow (SPEC §3.1). */
export type WorkflowStatus = 'pending' | 'running' | 'cancelling' | 'completed' | 'failed' | 'cancelled';

/** Every task status, in lifecycle order. */
export const TASK_STATUSES: readonly TaskStatus[] = ['pending', 'ready', 'running', 'completed', 'failed', 'upstream_failed', 'skipped', 'cancelled'];

/** Every workflow status. */
export const WORKFLOW_STATUSES: readonly WorkflowStatus[] = ['pending', 'running', 'cancelling', 'completed', 'failed', 'cancelled'];

const TERMINAL_TASK = new Set<TaskStatus>(['completed', 'failed', 'upstream_failed', 'skipped', 'cancelled']);
const TERMINAL_WORKFLOW = new Set<WorkflowStatus>(['completed', 'failed', 'cancelled']);

/** True for the statuses a task never leaves (except by a workflow retry). */
export function isTerminalTaskStatus(status: TaskStatus): boolean {
  return TERMINAL_TASK.has(status);
}

/** True for the statuses a workflow never leaves (except by a retry). */
export function isTerminalWorkflowStatus(status: WorkflowStatus): boolean {
  return TERMINAL_WORKFLOW.has(status);
}

/** A parent in one of these statuses lets its children go ahead (SPEC §3.1). */
export function isSatisfying(status: TaskStatus): boolean {
  return status === 'completed' || status === 'skipped';
}

/** A parent in one of these statuses holds its children back for good (SPEC §3.1). */
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
  startedAt: string | null;
  completedAt: string | null;
  /** True while the task's condition waits for parent outputs fetched from blobs. */
  awaitingInputs: boolean;
}

/** Number of tasks in each status. */
export type TaskCounts = Record<TaskStatus, number>;

/**
 * The whole state of one workflow: the definition it runs and what happened so far. Plain data,
 * never mutated by {@link reduce}; stored as the runtime blob through `encodeRuntime`.
 */
export interface WorkflowRuntime {
  workflowId: string;
  definition: WorkflowDefinition;
  /** Container of canonical output blobs, when known: lets task messages carry only parent names. */
  outputsContainer: string | null;
  status: WorkflowStatus;
  /** False until the coordinator first activates the workflow. */
  activated: boolean;
  /** True when the latest applied request is a cancel (SPEC §3.7). */
  cancelRequested: boolean;
  /** `requested_at` of the last cancel request applied; later requests must be newer. */
  cancelAppliedAt: string | null;
  /** `requested_at` of the last retry request applied. */
  retryAppliedAt: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  tasks: Record<string, TaskRuntime>;
  counts: TaskCounts;
}

/** The coordinator activates a workflow (after submit, a wake-up or a restart). */
export interface ActivateEvent {
  type: 'activate';
  now: string;
}

/** A worker reports the end of an attempt (SPEC §3.4, §5.3). */
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
}

/** A cancel request recorded on the index row (SPEC §3.7). */
export interface CancelEvent {
  type: 'cancel';
  now: string;
  /** When the request was made; defaults to `now`. Not newer than the last applied → ignored. */
  requestedAt?: string;
}

/** A retry request recorded on the index row (SPEC §3.7). */
export interface RetryEvent {
  type: 'retry';
  now: string;
  requestedAt?: string;
}

/** Periodic check of running tasks against their timeouts (SPEC §3.8). */
export interface TimeoutSweepEvent {
  type: 'timeout-sweep';
  now: string;
}

/** The parent outputs a condition asked for with `fetch-condition-inputs` (SPEC §3.3). */
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
export type WorkflowEvent = ActivateEvent | CompletionEvent | CancelEvent | RetryEvent | TimeoutSweepEvent | ConditionInputsEvent;

/** Push one task message to its queue. */
export interface DispatchEffect {
  type: 'dispatch';
  taskName: string;
  queue: string;
  /** The new attempt (1 on first dispatch). */
  attemptNo: number;
  /** The envelope text to send (SPEC §5.2). */
  message: string;
  /** The message id inside the envelope, `{workflow_id}/{task}/{attempt}`. */
  messageId: string;
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

/** The event was applied but had nothing to do (a cancel of a finished workflow, a retry with nothing to retry). */
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
}
