import { emptyCounts } from './create';
import type { TaskRuntime, WorkflowRuntime } from './types';

/** The workflow-level fields of a runtime: everything but its task states and their counts. */
export type RuntimeFields = Omit<WorkflowRuntime, 'tasks' | 'counts'>;

/**
 * Builds a runtime from its workflow-level fields and one state per task of `fields.definition`,
 * in definition order (the counts are derived). The one place that knows how task states are laid
 * out inside a runtime: `createRuntime`, the codecs and the stores build runtimes through it.
 *
 * @throws RangeError when `states` does not have one state per task.
 */
export function assembleRuntime(fields: RuntimeFields, states: readonly TaskRuntime[]): WorkflowRuntime {
  const defs = fields.definition.tasks;
  if (states.length !== defs.length) throw new RangeError(`assembleRuntime: ${states.length} task states for ${defs.length} tasks`);
  const tasks: Record<string, TaskRuntime> = {};
  const counts = emptyCounts();
  defs.forEach((def, i) => {
    const state = states[i]!;
    tasks[def.name] = state;
    counts[state.status]++;
  });
  return { ...fields, tasks, counts };
}
