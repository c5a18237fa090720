import type { WorkflowDefinition } from '../../../definition/types';
import { assembleRuntime } from './assemble';
import { graphIndex } from './graph-index';
import { TASK_STATUSES, type TaskCounts, type TaskRuntime, type WorkflowRuntime } from './types';

/** What {@link createRuntime} needs besides the definition. */
export interface CreateRuntimeInit {
  workflowId: string;
  /** ISO-8601 UTC, e.g. `2026-01-01T00:00:01.000Z`. */
  now: string;
  /** Container of canonical output blobs (docs/failure-model.md, "Outputs"); lets messages name blob parents compactly. */
  outputsContainer?: string | null;
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
  const states: TaskRuntime[] = index.tasks.map((def) => {
    const root = def.dependsOn.length === 0 && (def.gates ?? []).length === 0;
    return {
      status: root ? 'ready' : 'pending',
      attemptNo: 0,
      retryBase: 0,
      outputRef: null,
      error: null,
      dispatchedAt: null,
      startedAt: null,
      completedAt: null,
      awaitingInputs: false,
      retryDueAt: null,
    };
  });
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
      traceparent: null,
    },
    states,
  );
}
