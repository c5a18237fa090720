import type { RawWorkflowDefinition } from './schema';
import type { TaskDefinition, WorkflowDefinition } from './types';

type RawTask = RawWorkflowDefinition['tasks'][number];

/** @internal Fills defaults and turns a model-checked raw definition into the camelCase one. */
export function fromRaw(raw: RawWorkflowDefinition): WorkflowDefinition {
  return {
    name: raw.name,
    defaultQueue: raw.default_queue ?? 'default',
    defaultTaskTimeoutS: raw.default_task_timeout_s ?? null,
    maxParallelism: raw.max_parallelism ?? null,
    resultPolicy: raw.result_policy ?? 'all_sinks_succeed',
    tasks: raw.tasks.map((t: RawTask): TaskDefinition => {
      const task: TaskDefinition = {
        name: t.name,
        kwargs: t.kwargs ?? {},
        dependsOn: t.depends_on ?? [],
        queue: t.queue ?? null,
        depPolicy: t.dep_policy ?? 'all',
        condition: t.condition ?? null,
        numRetries: t.num_retries ?? 0,
        timeoutS: t.timeout_s ?? null,
      };
      // Only the engine's own (internal) model admits gates; the schema checked they are strings.
      const gates = (t as { gates?: unknown }).gates;
      if (Array.isArray(gates) && gates.length > 0) task.gates = gates as string[];
      return task;
    }),
  };
}

/**
 * The snake_case form of a definition with every field explicit: what is stored with a runtime
 * and hashed to recognise a resubmission. `validateWorkflow(toRawDefinition(d))` gives `d` back
 * (for definitions without merge nodes).
 */
export function toRawDefinition(definition: WorkflowDefinition): Record<string, unknown> {
  return {
    name: definition.name,
    default_queue: definition.defaultQueue,
    default_task_timeout_s: definition.defaultTaskTimeoutS,
    max_parallelism: definition.maxParallelism,
    result_policy: definition.resultPolicy,
    tasks: definition.tasks.map((t) => ({
      name: t.name,
      kwargs: t.kwargs,
      depends_on: t.dependsOn,
      queue: t.queue,
      dep_policy: t.depPolicy,
      condition: t.condition,
      num_retries: t.numRetries,
      timeout_s: t.timeoutS,
      ...(t.gates !== undefined && t.gates.length > 0 ? { gates: t.gates } : {}),
    })),
  };
}
