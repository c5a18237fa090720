import { buildCore, countStatuses, makeRuntime, statusIndex, type RuntimeFields } from './core';
import { Draft } from './draft';
import { graphIndex } from './graph-index';
import type { TaskRuntime, WorkflowRuntime } from './types';

export type { RuntimeFields } from './core';

/**
 * Builds a runtime from its workflow-level fields and one state per task of `fields.definition`,
 * in definition order; the counts and everything the reducer derives from the task states (parent
 * counters, per-chunk sets) are computed here, in O(tasks + edges). The one place that lays task
 * states out inside a runtime: `createRuntime`, the codecs and the stores build runtimes through it.
 *
 * @throws RangeError when `states` does not have one state per task, or a state has an unknown status.
 */
export function assembleRuntime(fields: RuntimeFields, states: readonly TaskRuntime[]): WorkflowRuntime {
  const index = graphIndex(fields.definition);
  if (states.length !== index.size) throw new RangeError(`assembleRuntime: ${states.length} task states for ${index.size} tasks`);
  const core = buildCore(index, states);
  return makeRuntime(fields, countStatuses(core), core);
}

/** Workflow-level fields {@link withTaskStates} may replace (the definition stays). */
export type ReplaceableFields = Partial<Omit<RuntimeFields, 'definition'>>;

const REPLACEABLE = new Set<string>([
  'workflowId',
  'outputsContainer',
  'status',
  'activated',
  'cancelRequested',
  'cancelAppliedAt',
  'retryAppliedAt',
  'createdAt',
  'updatedAt',
  'finishedAt',
  'corruptReason',
  'deadlineAt',
  'cancelReason',
  'rerunsApplied',
  'traceparent',
] satisfies Array<keyof ReplaceableFields>);

/**
 * A runtime equal to `runtime` with some task states replaced (`[name, state]`, applied in order)
 * and, optionally, some workflow-level fields: for tests, and for replaying a log of changed task
 * records onto a snapshot. Nothing is re-evaluated (no settle, no dispatch): the states are taken
 * as given, and the counts and derived data follow them. Costs O(entries) plus, for a state whose
 * status changes between "finished" and not, O(its dependents); `runtime` is not touched. Returns
 * `runtime` itself when there is nothing to replace.
 *
 * @throws RangeError for a name the definition does not have or a state with an unknown status.
 */
export function withTaskStates(
  runtime: WorkflowRuntime,
  entries: Iterable<readonly [string, TaskRuntime]>,
  fields: ReplaceableFields = {},
): WorkflowRuntime {
  const draft = new Draft(runtime);
  for (const [name, state] of entries) {
    const position = draft.positionOf(name);
    if (position === undefined) throw new RangeError(`withTaskStates: workflow "${runtime.workflowId}" has no task "${name}"`);
    statusIndex(state);
    draft.setTask(position, state);
  }
  for (const key of Object.keys(fields) as Array<keyof ReplaceableFields>) {
    if (!REPLACEABLE.has(key))
      throw new RangeError(`withTaskStates: ${JSON.stringify(key)} is not a workflow-level field that can be replaced`);
    const value = fields[key];
    if (value !== undefined) draft.set(key, value);
  }
  return draft.finish();
}
