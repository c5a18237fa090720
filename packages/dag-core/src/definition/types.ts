/** How many of a task's dependencies must succeed before it may run (SPEC §3.2). */
export type DepPolicy = 'all' | 'any' | 'all_settled' | number;

/** When a finished workflow counts as `completed` (SPEC §3.6). */
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
  /**
   * Extra required predecessors added by {@link sequentializeFanIn}: the task waits for each gate
   * to complete, in addition to its own `depPolicy`, and a blocked gate blocks it.
   */
  gates?: string[];
}

/** A validated workflow definition (SPEC §2). */
export interface WorkflowDefinition {
  name: string;
  tasks: TaskDefinition[];
  defaultQueue: string;
  defaultTaskTimeoutS: number | null;
  maxParallelism: number | null;
  resultPolicy: ResultPolicy;
}

/** The queue a task is routed to: its own `queue`, else the workflow's default. */
export function taskQueue(definition: WorkflowDefinition, task: TaskDefinition): string {
  return task.queue ?? definition.defaultQueue;
}

/** The timeout of a task in seconds, or null when none applies (SPEC §3.8). */
export function taskTimeoutS(definition: WorkflowDefinition, task: TaskDefinition): number | null {
  return task.timeoutS ?? definition.defaultTaskTimeoutS;
}
