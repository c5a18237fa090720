import { z } from 'zod';
import {
  INTERNAL_TASK_NAME_PATTERN,
  MAX_TASK_NAME_LENGTH,
  QUEUE_SPEC_PATTERN,
  TASK_NAME_PATTERN,
  parseQueueSpec,
  taskNameProblem,
} from './names';

/**
 * The zod model of a workflow file (snake_case, as written). The validator parses with it and the
 * JSON Schema is generated from it, so the two cannot drift apart. Rules that span fields
 * (dependencies, cycles, conditions) live in `semantics.ts`.
 */

function queueSpec() {
  return z.string().regex(new RegExp(QUEUE_SPEC_PATTERN), {
    error: (issue) => {
      const parsed = parseQueueSpec(String(issue.input));
      return parsed.ok ? 'not a queue spec' : parsed.error;
    },
  });
}

function taskName(allowReserved: boolean) {
  return z
    .string()
    .min(1)
    // Merge node names add a prefix and a batch number to a user name of up to the maximum length.
    .max(allowReserved ? MAX_TASK_NAME_LENGTH + 32 : MAX_TASK_NAME_LENGTH)
    .regex(new RegExp(allowReserved ? INTERNAL_TASK_NAME_PATTERN : TASK_NAME_PATTERN))
    .describe('Unique within the workflow; "/" groups tasks ("prep/featurize")');
}

const DEP_POLICY_RULE = 'dep_policy must be "all", "any", "all_settled" or an integer ≥ 1';

function taskSchema(allowReserved: boolean) {
  const kwargKey = allowReserved ? z.string() : z.string().regex(/^(?!__)/, { error: 'kwargs keys starting with "__" are reserved for the engine' });
  return z
    .strictObject({
      name: taskName(allowReserved),
      kwargs: z
        .record(kwargKey, z.unknown())
        .optional()
        .describe('Handed to the worker; the shell processor reads cmd, env, cwd and bg_dirsync_to'),
      // Entry names are checked against the tasks (unknown-dependency), not against the name rules.
      depends_on: z.array(z.string()).optional().describe('Names of the tasks this one waits for'),
      queue: queueSpec().nullable().optional().describe('NAME, ACCOUNT/NAME or sb://NAMESPACE/NAME; null = default_queue'),
      dep_policy: z
        .union([z.enum(['all', 'any', 'all_settled']), z.int().min(1)], { error: DEP_POLICY_RULE })
        .optional()
        .describe('all | any | all_settled | N: how many dependencies must succeed'),
      condition: z
        .string()
        .nullable()
        .optional()
        .describe('Python-like expression over inputs.PARENT.field; false skips the task'),
      num_retries: z.int().min(0).optional().describe('Extra attempts after a failure (attempts = num_retries + 1)'),
      timeout_s: z.int().min(1).nullable().optional().describe('Seconds a running attempt may take; null = default_task_timeout_s'),
      ...(allowReserved ? { gates: z.array(z.string()).optional() } : {}),
    })
    .describe('One task of the DAG');
}

/** @internal Builds the model; `allowReserved` admits the engine's merge nodes and gates. */
export function definitionSchema(allowReserved: boolean) {
  return z
    .strictObject({
      $schema: z.string().optional().describe('Ignored; lets editors find this schema'),
      name: z.string().regex(/\S/, { error: 'the workflow name needs a non-space character' }),
      tasks: z.array(taskSchema(allowReserved)).min(1, { error: 'a workflow needs at least one task' }),
      default_queue: queueSpec().optional().describe('Queue of tasks without their own; default "default"'),
      default_task_timeout_s: z.int().min(1).nullable().optional(),
      max_parallelism: z
        .int({ error: 'max_parallelism must be an integer ≥ 1 or null' })
        .min(1, { error: 'max_parallelism must be an integer ≥ 1 or null' })
        .nullable()
        .optional()
        .describe('At most this many tasks of the workflow run at once'),
      result_policy: z
        .enum(['all_sinks_succeed', 'all_tasks_succeed'], { error: 'result_policy must be "all_sinks_succeed" or "all_tasks_succeed"' })
        .optional(),
    })
    .describe('A jobq workflow: a DAG of tasks');
}

/** @internal The user-facing model. */
export const userDefinitionSchema = definitionSchema(false);
/** @internal The model the engine's own transforms are checked against. */
export const internalDefinitionSchema = definitionSchema(true);

/** The snake_case form of a workflow definition, as it appears in a file. */
export type RawWorkflowDefinition = z.output<typeof userDefinitionSchema>;

let cachedSchema: Record<string, unknown> | undefined;

/**
 * The JSON Schema (draft 2020-12) of a workflow file, generated from the validator's model.
 * Returns a fresh copy each time, so callers may modify it.
 */
export function workflowJsonSchema(): Record<string, unknown> {
  cachedSchema ??= {
    ...z.toJSONSchema(userDefinitionSchema, { target: 'draft-2020-12', io: 'input' }),
    title: 'jobq workflow definition',
  };
  return structuredCloneJson(cachedSchema);
}

function structuredCloneJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** @internal used by tests and messages */
export { taskNameProblem };
