import type { RawWorkflowDefinition } from './schema';
import type { ParamValue } from './params';
import type { TaskDefinition, WorkflowDefinition } from './types';

type RawTask = RawWorkflowDefinition['tasks'][number];

/** The resolved parameter values (the validator replaced the declarations by them); nothing when there are none. */
function paramsOf(params: RawWorkflowDefinition['params']): { params?: Record<string, ParamValue> } {
  const values = Object.entries(params ?? {}).filter((e): e is [string, ParamValue] => typeof e[1] !== 'object');
  return values.length === 0 ? {} : { params: Object.fromEntries(values) };
}

/** @internal Fills defaults and turns a model-checked raw definition into the camelCase one. */
export function fromRaw(raw: RawWorkflowDefinition): WorkflowDefinition {
  return {
    name: raw.name,
    defaultQueue: raw.default_queue ?? 'default',
    defaultTaskTimeoutS: raw.default_task_timeout_s ?? null,
    maxParallelism: raw.max_parallelism ?? null,
    resultPolicy: raw.result_policy ?? 'all_sinks_succeed',
    defaultRetryDelayS: raw.default_retry_delay_s ?? 0,
    defaultRetryBackoff: raw.default_retry_backoff ?? 1,
    defaultRetryMaxDelayS: raw.default_retry_max_delay_s ?? null,
    timeoutS: raw.timeout_s ?? null,
    ...paramsOf(raw.params),
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
        retryDelayS: t.retry_delay_s ?? null,
        retryBackoff: t.retry_backoff ?? null,
        retryMaxDelayS: t.retry_max_delay_s ?? null,
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
 * (for definitions without merge nodes). Fields added since the first format (the retry delays,
 * the workflow's `timeout_s`, the parameter values) are written only when they differ from their default, so a definition
 * that does not use them keeps the hash, and the stored form, an older jobq gave it.
 */
export function toRawDefinition(definition: WorkflowDefinition): Record<string, unknown> {
  return {
    name: definition.name,
    default_queue: definition.defaultQueue,
    default_task_timeout_s: definition.defaultTaskTimeoutS,
    max_parallelism: definition.maxParallelism,
    result_policy: definition.resultPolicy,
    ...(definition.defaultRetryDelayS !== 0 ? { default_retry_delay_s: definition.defaultRetryDelayS } : {}),
    ...(definition.defaultRetryBackoff !== 1 ? { default_retry_backoff: definition.defaultRetryBackoff } : {}),
    ...(definition.defaultRetryMaxDelayS !== null ? { default_retry_max_delay_s: definition.defaultRetryMaxDelayS } : {}),
    ...(definition.timeoutS !== null ? { timeout_s: definition.timeoutS } : {}),
    ...(definition.params !== undefined && Object.keys(definition.params).length > 0 ? { params: definition.params } : {}),
    tasks: definition.tasks.map((t) => ({
      name: t.name,
      kwargs: t.kwargs,
      depends_on: t.dependsOn,
      queue: t.queue,
      dep_policy: t.depPolicy,
      condition: t.condition,
      num_retries: t.numRetries,
      timeout_s: t.timeoutS,
      ...(t.retryDelayS !== null ? { retry_delay_s: t.retryDelayS } : {}),
      ...(t.retryBackoff !== null ? { retry_backoff: t.retryBackoff } : {}),
      ...(t.retryMaxDelayS !== null ? { retry_max_delay_s: t.retryMaxDelayS } : {}),
      ...(t.gates !== undefined && t.gates.length > 0 ? { gates: t.gates } : {}),
    })),
  };
}
