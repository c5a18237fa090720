import type { WorkflowDefinition } from '../definition/types';
import { assembleRuntime } from './assemble';
import { graphIndex } from './graph-index';
import { TASK_STATUSES, type TaskCounts, type TaskRuntime, type TaskStatus, type WorkflowRuntime } from './types';

/** What {@link createRuntime} needs besides the definition. */
export interface CreateRuntimeInit {
  workflowId: string;
  /** ISO-8601 UTC, e.g. `2026-01-01T00:00:01.000Z`. */
  now: string;
  /** Container of canonical output blobs (docs/design.md#outputs); lets messages name blob parents compactly. */
  outputsContainer?: string | null;
  /** The W3C `traceparent` of the workflow's trace (docs/observability.md#tracing); none by default. */
  traceparent?: string | null;
}

/** A task record with nothing of a run: `status`, attempts counted from `attemptNo` (a fresh retry budget). */
export function freshTask(status: TaskStatus, attemptNo: number): TaskRuntime {
  return {
    status,
    attemptNo,
    retryBase: attemptNo,
    outputRef: null,
    error: null,
    dispatchedAt: null,
    startedAt: null,
    completedAt: null,
    awaitingInputs: false,
    retryDueAt: null,
  };
}

/** Zero for every status. */
export function emptyCounts(): TaskCounts {
  return Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as TaskCounts;
}

/**
 * The runtime of a freshly submitted workflow: `pending` (not yet activated), tasks without
 * dependencies or gates `ready`, the rest `pending`. The definition must be valid.
 */
export function createRuntime(definition: WorkflowDefinition, init: CreateRuntimeInit): WorkflowRuntime {
  const index = graphIndex(definition);
  const states: TaskRuntime[] = index.tasks.map((_, i) => freshTask(index.root[i] === 1 ? 'ready' : 'pending', 0));
  return assembleRuntime(
    {
      workflowId: init.workflowId,
      definition,
      outputsContainer: init.outputsContainer ?? null,
      status: 'pending',
      activated: false,
      cancelRequested: false,
      cancelAppliedAt: null,
      retryAppliedAt: null,
      createdAt: init.now,
      updatedAt: init.now,
      finishedAt: null,
      corruptReason: null,
      deadlineAt: null,
      cancelReason: null,
      rerunsApplied: null,
      traceparent: init.traceparent ?? null,
    },
    states,
  );
}
