import { closestName, didYouMean } from '../suggest';
import type { PathSegment } from './path';

/**
 * The "did you mean" hints of definition issues (docs/workflow-language.md#diagnostics): the
 * fields of each object of a workflow file, the kwargs the shell processor reads, and the other
 * spellings people bring from other tools.
 */

/** The kwargs the shell processor reads (docs/workflow-language.md#kwargs). */
export const SHELL_KWARGS = ['cmd', 'env', 'cwd', 'bg_dirsync_to'] as const;

const WORKFLOW_FIELD_ALIASES: Readonly<Record<string, string>> = {
  jobs: 'tasks',
  steps: 'tasks',
  nodes: 'tasks',
  queue: 'default_queue',
  timeout: 'timeout_s',
  parameters: 'params',
  parallelism: 'max_parallelism',
  concurrency: 'max_parallelism',
  max_concurrency: 'max_parallelism',
  task_timeout_s: 'default_task_timeout_s',
};

const TASK_FIELD_ALIASES: Readonly<Record<string, string>> = {
  needs: 'depends_on',
  deps: 'depends_on',
  depends: 'depends_on',
  dependencies: 'depends_on',
  after: 'depends_on',
  requires: 'depends_on',
  retries: 'num_retries',
  max_retries: 'num_retries',
  retry: 'num_retries',
  timeout: 'timeout_s',
  if: 'condition',
  when: 'condition',
  args: 'kwargs',
  arguments: 'kwargs',
  inputs: 'kwargs',
};

/** Other spellings of the shell kwargs, kept to names no task would read for itself. */
const KWARG_ALIASES: Readonly<Record<string, string>> = {
  command: 'cmd',
  commands: 'cmd',
  environment: 'env',
  environ: 'env',
  env_vars: 'env',
  environment_variables: 'env',
  workdir: 'cwd',
  working_dir: 'cwd',
  working_directory: 'cwd',
  dirsync_to: 'bg_dirsync_to',
};

/** At a task's level (not under kwargs) these also mean a shell kwarg. */
const TASK_LEVEL_KWARG_ALIASES: Readonly<Record<string, string>> = {
  ...KWARG_ALIASES,
  run: 'cmd',
  script: 'cmd',
  shell: 'cmd',
};

/** The shell kwargs are 3 letters: only an inserted, dropped or swapped letter makes a near miss. */
const STRICT_UP_TO = 3;

/**
 * The hint of an unknown field at `path` (the field's own path), given the fields allowed there:
 * the closest allowed field, or, for a task field that is a shell kwarg, where it belongs.
 */
export function unknownFieldHint(path: readonly PathSegment[], field: string, allowed: readonly string[]): string | undefined {
  const inTask = path.length === 3 && path[0] === 'tasks' && typeof path[1] === 'number';
  const atTop = path.length === 1;
  const aliases = inTask ? TASK_FIELD_ALIASES : atTop ? WORKFLOW_FIELD_ALIASES : undefined;
  const near = closestName(
    field,
    allowed.filter((f) => f !== '$schema'),
    aliases === undefined ? {} : { aliases },
  );
  if (near !== undefined) return didYouMean(near);
  if (inTask) {
    const kwarg = (SHELL_KWARGS as readonly string[]).includes(field)
      ? field
      : closestName(field, SHELL_KWARGS, { aliases: TASK_LEVEL_KWARG_ALIASES, strictUpTo: STRICT_UP_TO });
    if (kwarg !== undefined) return `${didYouMean(`kwargs.${kwarg}`)} (the shell processor reads ${kwarg} from kwargs)`;
  }
  return undefined;
}

/**
 * The shell kwarg a kwargs key of a task is a near miss of (`command` → `cmd`, `cmds` → `cmd`), or
 * undefined; keys the shell processor reads, and keys far from all of them, are not.
 */
export function nearShellKwarg(key: string): string | undefined {
  if ((SHELL_KWARGS as readonly string[]).includes(key)) return undefined;
  return closestName(key, SHELL_KWARGS, { aliases: KWARG_ALIASES, strictUpTo: STRICT_UP_TO });
}

/** The hint of a name that is not one of `known` (a dependency, an input of a condition). */
export function unknownNameHint(name: string, known: Iterable<string>): string | undefined {
  const near = closestName(name, known);
  return near === undefined ? undefined : didYouMean(near);
}
