import { z } from 'zod';
import { SECRET_REF_PATTERN } from '../wire/secret-refs';
import { REFERENCE_NAME_PATTERN } from './references';
import {
  MAX_MATRIX_TASKS,
  MAX_RETRY_DELAY_S,
  MAX_TASK_KEY_LENGTH,
  MAX_TASK_NAME_LENGTH,
  MAX_WORKFLOW_NAME_LENGTH,
  MERGE_NAME_ROOM,
} from './limits';
import {
  INTERNAL_TASK_NAME_PATTERN,
  KWARG_KEY_PATTERN,
  QUEUE_SPEC_PATTERN,
  TASK_NAME_PATTERN,
  parseQueueSpec,
  taskKeyLength,
  taskNameProblem,
} from './names';

/**
 * The zod model of a workflow file (snake_case, as written). The validator parses with it and the
 * JSON Schema is generated from it, so the two cannot drift apart. Rules that span fields
 * (dependencies, cycles, conditions, what fits the storage) live in `semantics.ts`.
 *
 * Two models: the user's, for files; the engine's (`allowReserved`), for definitions the engine
 * built or stored itself (merge nodes, runtime blobs). The engine's keeps the rules it needs to
 * read a definition and no more, so a runtime stored by an older jobq still reads after the user
 * rules (kwargs, sizes) grew stricter.
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
  const name = z
    .string()
    .min(1)
    // Merge node names add a prefix and a batch number to a user name of up to the maximum length.
    .max(allowReserved ? MAX_TASK_NAME_LENGTH + MERGE_NAME_ROOM : MAX_TASK_NAME_LENGTH)
    .regex(new RegExp(allowReserved ? INTERNAL_TASK_NAME_PATTERN : TASK_NAME_PATTERN));
  const checked = allowReserved
    ? name
    : // The name is a Table RowKey once "%" and "/" are encoded; a pattern cannot count that.
      name.refine((n) => taskKeyLength(n) <= MAX_TASK_KEY_LENGTH);
  return checked.describe('Unique within the workflow; "/" groups tasks ("prep/featurize")');
}

/** A process cannot receive a NUL character in its command, working directory or environment. */
// eslint-disable-next-line no-control-regex
const NO_NUL = /^[^\u0000]*$/;
// eslint-disable-next-line no-control-regex
const ENV_NAME = /^[^=\u0000]+$/;
const NUL_RULE = 'contains a NUL character (U+0000), which a process cannot receive';
/** A well-formed `${{ params.NAME }}` or `${{ matrix.KEY }}`, for the JSON Schema. */
const VALUE_REF_PATTERN = `\\$\\{\\{[ \\t]*(?:params|matrix)\\.[A-Za-z_][A-Za-z0-9_]*[ \\t]*\\}\\}`;
/**
 * A kwargs.env string value for the JSON Schema: no NUL, and every `${{` starts a well-formed
 * secret, parameter or matrix reference. The validator makes the checks apart (the NUL here, the
 * references in `expand.ts`) to say which failed and where; a test keeps this pattern equal to both
 * for secret references (whether a parameter or matrix key exists is beyond a pattern).
 */
export const ENV_VALUE_PATTERN = `^(?:[^$\\u0000]|\\$(?!\\{\\{)|${SECRET_REF_PATTERN}|${VALUE_REF_PATTERN})*$`;
const KWARGS_DESCRIPTION = 'Handed to the worker; the shell processor reads cmd, env, cwd and bg_dirsync_to';

function envName() {
  return z.string().regex(ENV_NAME, {
    error: (issue) => {
      const name = String(issue.input);
      if (name === '') return 'an environment variable name may not be empty';
      return name.includes('=') ? 'an environment variable name may not contain "="' : `an environment variable name ${NUL_RULE}`;
    },
  });
}

/** Numbers and booleans are written out as the shell would see them (YAML reads `N: 3` as a number). */
function envValue() {
  const text = z.string().regex(NO_NUL, { error: NUL_RULE }).meta({ pattern: ENV_VALUE_PATTERN });
  return z.union([text, z.number(), z.boolean()], { error: 'must be a string, a number or a boolean' });
}

function shellString() {
  return z.string({ error: 'must be a string' }).regex(NO_NUL, { error: NUL_RULE });
}

/**
 * What the shell processor reads from kwargs, with the checks the worker makes before it starts
 * the process (`null` reads as absent, as in the worker); any other key is handed over as it is.
 */
const shellKwargs = z.looseObject({
  cmd: shellString().nullable().optional().describe('The command, run with bash -c'),
  cwd: shellString().min(1, { error: 'must not be empty' }).nullable().optional().describe('Working directory of the command'),
  env: z
    .record(envName(), envValue(), { error: 'must be an object of variables' })
    .nullable()
    .optional()
    .describe('Variables added to the worker environment; a value may use ${{ secrets.NAME }}, which the worker resolves'),
  bg_dirsync_to: shellString()
    // The worker refuses a blank destination when the task starts.
    .refine((value) => /\S/.test(value), { error: 'must not be empty' })
    .nullable()
    .optional()
    .describe('Where to copy $JOBQ_DIRSYNC_DIR while the command runs'),
});

const KWARG_KEY = new RegExp(KWARG_KEY_PATTERN);

/** The user's kwargs: the shell kwargs checked, and no key starting with "__". */
function userKwargs() {
  return (
    shellKwargs
      .superRefine((kwargs, ctx) => {
        for (const key of Object.keys(kwargs)) {
          if (KWARG_KEY.test(key)) continue;
          ctx.addIssue({
            code: 'custom',
            path: [key],
            input: key,
            message: 'kwargs keys starting with "__" are reserved for the engine',
            params: { code: 'reserved-kwarg', target: 'key' },
          });
        }
      })
      .describe(KWARGS_DESCRIPTION)
      // The rule the check above enforces, for the JSON Schema (which cannot carry a refinement).
      .meta({ propertyNames: { type: 'string', pattern: KWARG_KEY_PATTERN } })
  );
}

const DEP_POLICY_RULE = 'dep_policy must be "all", "any", "all_settled" or an integer ≥ 1';

/** Seconds of a retry delay: 0 to {@link MAX_RETRY_DELAY_S} (the Storage Queue's longest delay), or null for the default. */
function retryDelaySeconds(description: string) {
  return z.int().min(0).max(MAX_RETRY_DELAY_S).nullable().optional().describe(description);
}

/** A retry backoff factor: a finite number ≥ 1, or null for the default. */
function retryBackoff(description: string) {
  return z.number().min(1).nullable().optional().describe(description);
}

/** A parameter or matrix value. */
function scalar() {
  return z.union([z.string(), z.number(), z.boolean()]);
}

function referenceName() {
  return z.string().regex(new RegExp(REFERENCE_NAME_PATTERN));
}

/**
 * The matrix of a task. Only for the JSON Schema: `expand.ts` reads and checks matrices (with
 * messages of its own) before the model sees the definition, which by then has none.
 */
function matrixSchema() {
  const entries = (description: string) =>
    z
      .array(z.record(referenceName(), scalar()).meta({ minProperties: 1 }))
      .optional()
      .describe(description);
  return z
    .object({
      include: entries('Combinations to add, or keys to add to the combinations whose axis values they match (as in GitHub Actions)'),
      exclude: entries('Combinations to leave out: every one whose values match all the keys of an entry'),
    })
    .catchall(z.array(scalar()).min(1))
    .meta({ propertyNames: { type: 'string', pattern: REFERENCE_NAME_PATTERN } })
    .describe(
      `One task per combination of the axes (KEY: [VALUES…]), named NAME(KEY=VALUE,…); \${{ matrix.KEY }} in kwargs, queue and condition, and JOBQ_MATRIX_<KEY> in the task's environment, give its values; at most ${MAX_MATRIX_TASKS} tasks`,
    );
}

/**
 * Workflow parameters, each with its default, or `{type, default, description}` (no default: it
 * must be given). In a stored definition, the values used. The validator resolves them
 * (`params.ts`) before the model sees them.
 */
function paramsSchema(allowReserved: boolean) {
  const long = z.strictObject({
    type: z.enum(['string', 'number', 'integer', 'boolean']).optional(),
    default: scalar().nullable().optional(),
    description: z.string().optional(),
  });
  return z
    .record(referenceName(), allowReserved ? scalar() : z.union([scalar(), long]))
    .optional()
    .describe(
      'Parameters with their defaults; --param KEY=VALUE and --params-file override them; ${{ params.KEY }} and JOBQ_PARAM_<KEY> give their values',
    );
}

function taskSchema(allowReserved: boolean) {
  return z
    .strictObject({
      name: taskName(allowReserved),
      kwargs: (allowReserved ? z.record(z.string(), z.unknown()).describe(KWARGS_DESCRIPTION) : userKwargs()).optional(),
      // Entry names are checked against the tasks (unknown-dependency), not against the name rules.
      depends_on: z.array(z.string()).optional().describe('Names of the tasks this one waits for'),
      queue: queueSpec().nullable().optional().describe('NAME, ACCOUNT/NAME or sb://NAMESPACE/NAME; null = default_queue'),
      dep_policy: z
        .union([z.enum(['all', 'any', 'all_settled']), z.int().min(1)], { error: DEP_POLICY_RULE })
        .optional()
        .describe('all | any | all_settled | N: how many dependencies must succeed'),
      condition: z.string().nullable().optional().describe('Python-like expression over inputs.PARENT.field; false skips the task'),
      num_retries: z.int().min(0).optional().describe('Extra attempts after a failure (attempts = num_retries + 1)'),
      timeout_s: z.int().min(1).nullable().optional().describe('Seconds a running attempt may take; null = default_task_timeout_s'),
      retry_delay_s: retryDelaySeconds(
        'Seconds the first retry waits before its queue delivers it (at most 7 days); null = default_retry_delay_s',
      ),
      retry_backoff: retryBackoff('Each further retry waits this many times longer (≥ 1); null = default_retry_backoff'),
      retry_max_delay_s: retryDelaySeconds('Longest wait of a retry in seconds (at most 7 days); null = default_retry_max_delay_s'),
      ...(allowReserved ? { gates: z.array(z.string()).optional() } : { matrix: matrixSchema().optional() }),
    })
    .describe('One task of the DAG');
}

const workflowName = z.string().regex(/\S/, { error: 'the workflow name needs a non-space character' });

function workflowNameTooLong(input: unknown): string {
  return `a workflow name has at most ${MAX_WORKFLOW_NAME_LENGTH} characters (this one has ${typeof input === 'string' ? input.length : '?'})`;
}

/** @internal Builds the model; `allowReserved` admits the engine's merge nodes and gates. */
export function definitionSchema(allowReserved: boolean) {
  return z
    .strictObject({
      $schema: z.string().optional().describe('Ignored; lets editors find this schema'),
      name: allowReserved
        ? workflowName
        : workflowName.max(MAX_WORKFLOW_NAME_LENGTH, { error: (issue) => workflowNameTooLong(issue.input) }),
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
      default_retry_delay_s: retryDelaySeconds('retry_delay_s of tasks without their own; default 0 (retries go out at once)'),
      default_retry_backoff: retryBackoff('retry_backoff of tasks without their own; default 1'),
      default_retry_max_delay_s: retryDelaySeconds('retry_max_delay_s of tasks without their own; default none (7 days at most)'),
      timeout_s: z
        .int()
        .min(1)
        .nullable()
        .optional()
        .describe('Seconds the workflow may run from its activation (or its last retry); past it the coordinator cancels it'),
      params: paramsSchema(allowReserved),
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
