import { coreOf, stateAt } from './core';
import type { GraphIndex } from './graph-index';
import type { TaskRuntime, WorkflowRuntime } from './types';

/**
 * Re-running a task (docs/failure-model.md, "Re-running a task"): which tasks a request re-runs,
 * and why it may not be applied now. Shared by the reducer (which applies a `rerun` event) and by
 * clients (which refuse a request the reducer would not apply, before writing anything).
 */

/**
 * The positions a re-run of the task at `position` re-runs, ascending: the task itself and, with
 * `downstream`, every task that depends on it transitively (through `depends_on` and gates).
 * O(tasks re-run + their edges).
 */
export function rerunPositions(index: GraphIndex, position: number, downstream: boolean): number[] {
  if (!downstream) return [position];
  const seen = new Uint8Array(index.size);
  seen[position] = 1;
  const found = [position];
  for (let i = 0; i < found.length; i++) {
    const p = found[i]!;
    for (let e = index.outStart[p]!; e < index.outStart[p + 1]!; e++) {
      const child = index.outChild[e]!;
      if (seen[child] === 1) continue;
      seen[child] = 1;
      found.push(child);
    }
  }
  return found.sort((a, b) => a - b);
}

/** What a re-run needs to know of a runtime: its cancel, and the state of a task by position. */
export interface RerunView {
  readonly workflowId: string;
  readonly cancelRequested: boolean;
  readonly status: WorkflowRuntime['status'];
  task(position: number): TaskRuntime;
}

/** `running now (attempt 3)`, `queued now (ready)`, or null for a task that is neither. */
function busy(task: TaskRuntime): string | null {
  if (task.status === 'ready') return 'queued now (ready, about to be dispatched)';
  if (task.status !== 'running') return null;
  return task.retryDueAt === null
    ? `running now (attempt ${task.attemptNo})`
    : `running now (attempt ${task.attemptNo}, a retry waiting for its delay)`;
}

/**
 * Why a re-run of the task at `position` (re-running `positions`) cannot be applied now, or null
 * when it can: a cancel stands (a retry of the workflow lifts it); the task has not run yet
 * (pending); it, or with `downstream` a task that depends on it, is queued or running now.
 */
export function rerunRefusal(index: GraphIndex, view: RerunView, position: number, positions: readonly number[]): string | null {
  const name = index.tasks[position]!.name;
  if (view.cancelRequested) {
    return `workflow "${view.workflowId}" is ${view.status === 'cancelling' ? 'being cancelled' : 'cancelled'}: a re-run does not lift a cancel (retry the workflow first)`;
  }
  const own = view.task(position);
  if (own.status === 'pending') return `task "${name}" has not run yet (pending): it runs when its dependencies allow`;
  const itself = busy(own);
  if (itself !== null) return `task "${name}" is ${itself}: wait until it has finished`;
  for (const p of positions) {
    if (p === position) continue;
    const other = busy(view.task(p));
    if (other !== null) return `task "${index.tasks[p]!.name}", which depends on "${name}", is ${other}: wait until it has finished`;
  }
  return null;
}

/** What {@link planRerun} decides. */
export type RerunPlan =
  | {
      ok: true;
      /** The task and, with `downstream`, its transitive dependents, in definition order. */
      tasks: string[];
    }
  | {
      ok: false;
      /** `unknown-task` for a name the definition does not have; `refused` when the runtime is not in a state to re-run it. */
      code: 'unknown-task' | 'refused';
      /** One line saying why. */
      reason: string;
    };

const NAMES_SHOWN = 5;

/**
 * Whether a re-run of `taskName` (with `downstream`) would be applied to `runtime` as it is, and
 * which tasks it re-runs: what a client checks before it records a request. The coordinator's
 * reducer decides again when it applies the request (the runtime may have moved on), with the same
 * rules.
 */
export function planRerun(runtime: WorkflowRuntime, taskName: string, downstream: boolean): RerunPlan {
  const core = coreOf(runtime);
  const index = core.index;
  const position = index.positionOf(taskName);
  if (position === undefined) {
    const names = index.tasks.slice(0, NAMES_SHOWN).map((t) => t.name);
    const more = index.size > NAMES_SHOWN ? `, … (${index.size} in all)` : '';
    return {
      ok: false,
      code: 'unknown-task',
      reason: `workflow "${runtime.workflowId}" has no task "${taskName}" (its tasks: ${names.join(', ')}${more})`,
    };
  }
  const positions = rerunPositions(index, position, downstream);
  const view: RerunView = {
    workflowId: runtime.workflowId,
    cancelRequested: runtime.cancelRequested,
    status: runtime.status,
    task: (p) => stateAt(core, p),
  };
  const reason = rerunRefusal(index, view, position, positions);
  if (reason !== null) return { ok: false, code: 'refused', reason };
  return { ok: true, tasks: positions.map((p) => index.tasks[p]!.name) };
}
