import { MAX_RETRY_DELAY_S } from './limits';
import type { ParamValue } from './params';

/** How many of a task's dependencies must succeed before it may run (docs/workflow-language.md#dependency-policies). */
export type DepPolicy = 'all' | 'any' | 'all_settled' | number;

/** When a finished workflow counts as `completed` (docs/workflow-language.md#workflow-status-and-result_policy). */
export type ResultPolicy = 'all_sinks_succeed' | 'all_tasks_succeed';

/** One node of a workflow DAG, as validated. Field names are the camelCase of the file's keys. */
export interface TaskDefinition {
  name: string;
  /** Handed to the worker's processor; the shell processor reads `cmd`, `env`, `cwd`, `bg_dirsync_to`. */
  kwargs: Record<string, unknown>;
  dependsOn: string[];
  /** Queue spec; `null` means the workflow's `defaultQueue` (see {@link taskQueue}). */
  queue: string | null;
  depPolicy: DepPolicy;
  condition: string | null;
  numRetries: number;
  /** `null` means the workflow's `defaultTaskTimeoutS` (see {@link taskTimeoutS}). */
  timeoutS: number | null;
  /** Seconds before the first retry is delivered; `null` means the workflow's `defaultRetryDelayS` (see {@link retryDelayS}). */
  retryDelayS: number | null;
  /** Factor (≥ 1) each further retry's delay is multiplied by; `null` means the workflow's `defaultRetryBackoff`. */
  retryBackoff: number | null;
  /** Longest delay of a retry in seconds; `null` means the workflow's `defaultRetryMaxDelayS`. */
  retryMaxDelayS: number | null;
  /**
   * Extra required predecessors added by {@link sequentializeFanIn}: the task waits for each gate
   * to complete, in addition to its own `depPolicy`, and a blocked gate blocks it.
   */
  gates?: string[];
}

/** A validated workflow definition (docs/workflow-language.md). */
export interface WorkflowDefinition {
  name: string;
  tasks: TaskDefinition[];
  defaultQueue: string;
  defaultTaskTimeoutS: number | null;
  maxParallelism: number | null;
  resultPolicy: ResultPolicy;
  /** Retry delay of tasks without their own `retryDelayS` (default 0: retries go out at once). */
  defaultRetryDelayS: number;
  /** Retry backoff of tasks without their own `retryBackoff` (default 1: every retry waits the same). */
  defaultRetryBackoff: number;
  /** Longest retry delay of tasks without their own `retryMaxDelayS` (null: only {@link MAX_RETRY_DELAY_S} bounds it). */
  defaultRetryMaxDelayS: number | null;
  /**
   * The workflow's deadline in seconds from its activation (or its last retry); past it the
   * coordinator cancels the workflow. `null`: no deadline.
   */
  timeoutS: number | null;
  /**
   * The values of the workflow's parameters that were used (defaults and overrides resolved; they
   * are already substituted into the tasks). Absent when the workflow has none.
   */
  params?: Record<string, ParamValue>;
}

/** The queue a task is routed to: its own `queue`, else the workflow's default. */
export function taskQueue(definition: WorkflowDefinition, task: TaskDefinition): string {
  return task.queue ?? definition.defaultQueue;
}

/** The timeout of a task in seconds, or null when none applies (docs/failure-model.md#timeouts-and-lost-tasks). */
export function taskTimeoutS(definition: WorkflowDefinition, task: TaskDefinition): number | null {
  return task.timeoutS ?? definition.defaultTaskTimeoutS;
}

/** The retry delay settings of a task, the workflow's defaults filled in. */
export interface RetryDelaySettings {
  delayS: number;
  backoff: number;
  maxDelayS: number | null;
}

/** A task's retry delay settings: its own, else the workflow's defaults. */
export function retryDelaySettings(definition: WorkflowDefinition, task: TaskDefinition): RetryDelaySettings {
  return {
    delayS: task.retryDelayS ?? definition.defaultRetryDelayS,
    backoff: task.retryBackoff ?? definition.defaultRetryBackoff,
    maxDelayS: task.retryMaxDelayS ?? definition.defaultRetryMaxDelayS,
  };
}

/**
 * Seconds attempt `k` waits before the queue delivers it, `k` counted from 1 since the last
 * workflow retry: 0 for the first attempt, else `min(delayS × backoff^(k−2), maxDelayS)`, never
 * more than {@link MAX_RETRY_DELAY_S} (validation refuses definitions that would need more).
 */
export function delayBeforeAttempt(settings: RetryDelaySettings, k: number): number {
  if (!(k >= 2) || !(settings.delayS > 0)) return 0;
  const grown = settings.delayS * Math.pow(settings.backoff, k - 2);
  const capped = settings.maxDelayS === null ? grown : Math.min(grown, settings.maxDelayS);
  return Number.isFinite(capped) ? Math.min(capped, MAX_RETRY_DELAY_S) : MAX_RETRY_DELAY_S;
}

/** {@link delayBeforeAttempt} of a task of `definition`. */
export function retryDelayS(definition: WorkflowDefinition, task: TaskDefinition, k: number): number {
  return delayBeforeAttempt(retryDelaySettings(definition, task), k);
}
