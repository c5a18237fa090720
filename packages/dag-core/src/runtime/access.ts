import type { TaskRuntime, TaskStatus, WorkflowRuntime } from './types';

/**
 * Reading a runtime's task states. Code outside the reducer reads tasks only through these
 * functions, never through the runtime's internal layout, which is free to change (it is chosen for
 * what the reducer needs: O(1) per change, not per task).
 */

/** The state of task `name`, or undefined when the definition has no such task. */
export function taskState(runtime: WorkflowRuntime, name: string): TaskRuntime | undefined {
  return Object.prototype.hasOwnProperty.call(runtime.tasks, name) ? runtime.tasks[name] : undefined;
}

/** The status of task `name`; `pending` when the definition has no such task. */
export function taskStatus(runtime: WorkflowRuntime, name: string): TaskStatus {
  return taskState(runtime, name)?.status ?? 'pending';
}

/** Every task's `[name, state]`, in definition order. */
export function* tasksIn(runtime: WorkflowRuntime): IterableIterator<[string, TaskRuntime]> {
  for (const def of runtime.definition.tasks) {
    const state = taskState(runtime, def.name);
    if (state !== undefined) yield [def.name, state];
  }
}

/** The number of tasks of the runtime. */
export function taskCount(runtime: WorkflowRuntime): number {
  return runtime.definition.tasks.length;
}

/**
 * The names of the tasks whose state differs between `previous` and `runtime` (the reducer replaces
 * a changed task's record and shares the others), in definition order; every task without
 * `previous`. Both must be runtimes of one workflow.
 */
export function changedTasks(previous: WorkflowRuntime | undefined, runtime: WorkflowRuntime): string[] {
  if (previous === undefined) return runtime.definition.tasks.map((t) => t.name);
  if (previous.tasks === runtime.tasks) return [];
  const changed: string[] = [];
  for (const [name, state] of tasksIn(runtime)) if (taskState(previous, name) !== state) changed.push(name);
  return changed;
}
