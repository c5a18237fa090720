import { SEGMENT_SHIFT, chunkOf, coreOf, stateAt } from './core';
import type { TaskRuntime, TaskStatus, WorkflowRuntime } from './types';

/**
 * Reading a runtime's task states. Code outside the reducer reads tasks only through these
 * functions, never through the runtime's internal layout, which is free to change (it is chosen for
 * what the reducer needs: O(1) per change, not per task).
 *
 * Costs: `taskState`, `taskStatus`, `taskCount` O(1); `tasksIn` O(1) per task it yields;
 * `changedTasks(previous, runtime)` O(segments + changed segments × 64 + changed chunks × 256) —
 * it compares the persistent structure by identity and looks only inside the parts that differ. `runtime.tasks` still reads as a
 * record, built on first read and cached per runtime object: O(tasks), for tests and old callers,
 * never for a hot path.
 */

/** The state of task `name`, or undefined when the definition has no such task. */
export function taskState(runtime: WorkflowRuntime, name: string): TaskRuntime | undefined {
  const core = coreOf(runtime);
  const position = core.index.positionOf(name);
  return position === undefined ? undefined : stateAt(core, position);
}

/** The status of task `name`; `pending` when the definition has no such task. */
export function taskStatus(runtime: WorkflowRuntime, name: string): TaskStatus {
  return taskState(runtime, name)?.status ?? 'pending';
}

/** Every task's `[name, state]`, in definition order. */
export function* tasksIn(runtime: WorkflowRuntime): IterableIterator<[string, TaskRuntime]> {
  const core = coreOf(runtime);
  const { tasks, chunkShift } = core.index;
  for (let c = 0; c < core.chunks; c++) {
    const states = chunkOf(core, c).states;
    const start = c << chunkShift;
    for (let o = 0; o < states.length; o++) yield [tasks[start + o]!.name, states[o]!];
  }
}

/** The number of tasks of the runtime. */
export function taskCount(runtime: WorkflowRuntime): number {
  return runtime.definition.tasks.length;
}

/**
 * The names of the tasks whose state differs between `previous` and `runtime` (the reducer replaces
 * a changed task's record and shares the others, and shares whole chunks of them), in definition
 * order; every task without `previous`. Both must be runtimes of one workflow (the same tasks in
 * the same order). For runtimes that descend from one another this costs O(changed) plus a
 * constant per copied segment and chunk (64 and 256); O(tasks) for unrelated objects (a runtime
 * decoded again).
 */
export function changedTasks(previous: WorkflowRuntime | undefined, runtime: WorkflowRuntime): string[] {
  if (previous === undefined) return runtime.definition.tasks.map((t) => t.name);
  const before = coreOf(previous);
  const after = coreOf(runtime);
  if (before.segments === after.segments) return [];
  const tasks = after.index.tasks;
  const changed: string[] = [];
  if (before.index.chunkShift !== after.index.chunkShift || before.index.size !== after.index.size) {
    // Laid out differently: compare task by task, by name.
    for (const [name, state] of tasksIn(runtime)) if (taskState(previous, name) !== state) changed.push(name);
    return changed;
  }
  // Shared segments and chunks are skipped whole; only the copies are looked into.
  const shift = after.index.chunkShift;
  for (let seg = 0; seg < after.segments.length; seg++) {
    const mine = after.segments[seg]!;
    const theirs = before.segments[seg]!;
    if (mine === theirs) continue;
    for (let i = 0; i < mine.length; i++) {
      const now = mine[i]!.states;
      const then = theirs[i]!.states;
      if (now === then) continue;
      const start = ((seg << SEGMENT_SHIFT) + i) << shift;
      for (let o = 0; o < now.length; o++) if (now[o] !== then[o]) changed.push(tasks[start + o]!.name);
    }
  }
  return changed;
}
