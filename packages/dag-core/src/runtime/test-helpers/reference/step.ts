import type { Draft } from './draft';
import type { GraphIndex } from './graph-index';
import type { Effect, TaskRuntime } from './types';
import { isTerminalTaskStatus } from './types';

/** The working state of one `reduce` call, shared by the rules that make it up. */
export interface Step {
  readonly d: Draft;
  readonly index: GraphIndex;
  readonly now: string;
  readonly effects: Effect[];
  /** Tasks whose parents changed: to be re-evaluated before the call ends. */
  readonly worklist: string[];
}

/**
 * Moves a task to a new status. A task that becomes terminal hands its dependents to the worklist,
 * so policies, gates and conditions below it are re-evaluated in the same call.
 */
export function transition(step: Step, name: string, patch: Partial<TaskRuntime> & Pick<TaskRuntime, 'status'>): void {
  const terminal = isTerminalTaskStatus(patch.status);
  step.d.updateTask(name, terminal ? { completedAt: step.now, awaitingInputs: false, ...patch } : patch);
  if (terminal) {
    const dependents = step.index.dependents.get(name);
    if (dependents) step.worklist.push(...dependents);
  }
}
