import { Flags } from '@oclif/core';
import { JobqError, isJobqError } from '@jobq/ports';
import { envValue } from '@jobq/ports';
import { JobqCommand } from '../../base';
import { UsageError } from '../../errors';

/** The `jobq task` command of each Node helper, for error messages. */
const COMMAND_OF_HELPER: Record<string, string> = {
  setOutput: 'set-output',
  getUpstreamOutputs: 'get-upstream-outputs',
  getUpstreamOutput: 'get-upstream',
  getRealUpstreamTasks: 'get-real-upstream-tasks',
  isCancelled: 'is-cancelled',
  stashFile: 'stash-file',
  getFile: 'get-file',
};

/** The variables every workflow task gets from its worker (docs/design.md#the-workflow-processor). */
const TASK_VARIABLES = [
  'JOBQ_WORKFLOW_ID',
  'JOBQ_WORKFLOW_TASK',
  'JOBQ_WORKFLOW_ATTEMPT',
  'JOBQ_WORKFLOW_PREFIX',
  'JOBQ_WORKFLOW_QUEUES',
  'JOBQ_WORKFLOW_BLOBS',
  'JOBQ_OUTPUT_FILE',
  'JOBQ_WORKFLOW_UPSTREAM_REFS',
  'JOBQ_WORKFLOW_REAL_UPSTREAM',
  'JOBQ_WORKFLOW_CANCEL_FILE',
  // The worker's task channel; its token (JOBQ_TASK_TOKEN) is never printed.
  'JOBQ_TASK_SOCKET',
] as const;

/**
 * Refuses to run outside a workflow task: one clear line, exit 2. `JOBQ_WORKFLOW_ID` and
 * `JOBQ_WORKFLOW_TASK` are always checked, `extra` variables too.
 */
export function requireTaskEnvironment(command: string, extra: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): void {
  for (const name of ['JOBQ_WORKFLOW_TASK', 'JOBQ_WORKFLOW_ID', ...extra]) {
    if (envValue(env, name) === null) {
      throw new UsageError(`jobq task ${command} can only run inside a jobq workflow task (${name} is not set)`);
    }
  }
}

/** A helper's message with `helperName()` replaced by the `jobq task …` command. */
export function cliMessage(message: string): string {
  return message.replace(
    /\b(setOutput|getUpstreamOutputs|getUpstreamOutput|getRealUpstreamTasks|isCancelled|stashFile|getFile)\(\)/g,
    (_m, helper: string) => {
      const command = COMMAND_OF_HELPER[helper];
      return command === undefined ? `${helper}()` : `jobq task ${command}`;
    },
  );
}

/**
 * Runs a task helper and translates its errors for the command line: a missing or bad setting
 * (`invalid-config`) and a bad argument (`invalid-argument`, e.g. a task that is not upstream) are
 * usage errors (exit 2); anything else a failure (exit 1). Messages name the `jobq task` command.
 */
export async function callHelper<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isJobqError(error)) {
      const message = cliMessage(error.message);
      if (error.code === 'invalid-config' || error.code === 'invalid-argument') throw new UsageError(message);
      throw new JobqError(error.code, message, { cause: error, details: error.details });
    }
    throw error;
  }
}

/** One JSON value on one line of stdout. */
export function writeJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export default class TaskInfo extends JobqCommand {
  static override summary = 'Show the workflow task environment this process runs in';
  static override description =
    'Prints the workflow id, task name, attempt and the other JOBQ_* settings the worker gives a workflow task, as one JSON object ' +
    '(values that are not set are null; connection strings are never printed). "in_task" is false outside a workflow task; ' +
    'with --check, running outside a workflow task is an error (exit 2).';
  static override examples = [
    '<%= config.bin %> task info',
    'echo "attempt $(<%= config.bin %> task info | jq .attempt)"',
    '<%= config.bin %> task info --check',
  ];
  static override flags = {
    check: Flags.boolean({ description: 'Exit 2 with one line on stderr when not inside a workflow task', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(TaskInfo);
    if (flags.check) requireTaskEnvironment('info');
    const env = process.env;
    const attempt = envValue(env, 'JOBQ_WORKFLOW_ATTEMPT');
    const variables: Record<string, string | null> = {};
    for (const name of TASK_VARIABLES) variables[name] = envValue(env, name);
    writeJsonLine({
      in_task: envValue(env, 'JOBQ_WORKFLOW_ID') !== null && envValue(env, 'JOBQ_WORKFLOW_TASK') !== null,
      workflow_id: envValue(env, 'JOBQ_WORKFLOW_ID'),
      task: envValue(env, 'JOBQ_WORKFLOW_TASK'),
      attempt: attempt === null || !/^\d+$/.test(attempt) ? attempt : Number(attempt),
      prefix: envValue(env, 'JOBQ_WORKFLOW_PREFIX'),
      variables,
    });
  }
}
