// The runtime types of the reference reducer: the shared event, effect and task types, with the
// plain-object runtime the reducer used before its incremental representation.
import type { Effect, TaskRuntime, WorkflowRuntime as LiveRuntime } from '../../types';

export * from '../../types';

/** A runtime as plain data: `tasks` is an ordinary record, copied on the first change of a call. */
export interface WorkflowRuntime extends Omit<LiveRuntime, 'tasks'> {
  tasks: Record<string, TaskRuntime>;
}

/** The outcome of one reference `reduce` call. */
export interface ReduceResult {
  runtime: WorkflowRuntime;
  effects: Effect[];
}
