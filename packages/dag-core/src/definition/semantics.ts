import { compileCondition } from '../condition';
import { findCycle } from './graph';
import { checkKwargs } from './kwargs';
import type { PathSegment } from './path';
import type { RawIssue } from './raw-issue';
import { MAX_RETRY_DELAY_S } from './limits';
import { checkStorageFit } from './storage-fit';
import { nearShellKwarg, unknownNameHint } from './hints';
import { didYouMean } from '../suggest';

/** Unknown dependencies of one definition that get a "did you mean" hint. */
const MAX_DEPENDENCY_HINTS = 20;

/** Prefix of the merge nodes {@link sequentializeFanIn} adds. */
export const MERGE_PREFIX = '__merge_';

interface NamedRef {
  name: string;
  index: number;
}

/** What the cross-field checks need of a task, read defensively from input that may be ill-typed. */
interface LooseTask {
  index: number;
  name: string | undefined;
  dependsOn: NamedRef[];
  gates: NamedRef[];
  depPolicy: unknown;
  condition: unknown;
  queue: unknown;
  kwargs: Record<string, unknown> | undefined;
  /** The task object as written, for fields read only by one check. */
  raw: Record<string, unknown>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringsOf(value: unknown): NamedRef[] {
  if (!Array.isArray(value)) return [];
  const out: NamedRef[] = [];
  value.forEach((item, index) => {
    if (typeof item === 'string') out.push({ name: item, index });
  });
  return out;
}

function looseTasks(raw: unknown): LooseTask[] {
  if (!isRecord(raw) || !Array.isArray(raw.tasks)) return [];
  return raw.tasks.map((task, index) => {
    const t = isRecord(task) ? task : {};
    return {
      index,
      name: typeof t.name === 'string' ? t.name : undefined,
      dependsOn: stringsOf(t.depends_on),
      gates: stringsOf(t.gates),
      depPolicy: t.dep_policy,
      condition: t.condition,
      queue: t.queue,
      kwargs: isRecord(t.kwargs) ? t.kwargs : undefined,
      raw: t,
    };
  });
}

/** True for the merge nodes the fan-in transform generates. */
export function isMergeNode(name: string, kwargs: Readonly<Record<string, unknown>> | undefined): boolean {
  return name.startsWith(MERGE_PREFIX) && kwargs?.__batch_merge === true;
}

/** The kwargs keys of a task that are near misses of what the shell processor reads (`command` → `cmd`). */
function misspeltKwargs(kwargs: Record<string, unknown>): Array<{ key: string; kwarg: string }> {
  const out: Array<{ key: string; kwarg: string }> = [];
  for (const key of Object.keys(kwargs)) {
    const kwarg = nearShellKwarg(key);
    // Both written (`cmd` and `command`): the task reads the other one itself.
    if (kwarg !== undefined && kwargs[kwarg] === undefined) out.push({ key, kwarg });
  }
  return out;
}

/** A `cmd` the shell processor fails as missing: absent, null or blank. */
function lacksCmd(kwargs: Record<string, unknown> | undefined): boolean {
  const cmd = kwargs?.cmd;
  return cmd === undefined || cmd === null || (typeof cmd === 'string' && cmd.trim() === '');
}

/**
 * Checks that span fields and tasks: names unique, dependencies known, no cycle, policies that
 * fit the dependency count, conditions that compile against their dependencies; for a user
 * definition also what the model cannot check in kwargs (`kwargs.ts`) and what fits the storage
 * (`storage-fit.ts`). Runs on the raw input even when it has type errors, so one pass reports
 * every problem. `internal`: a definition the engine built or stored, already checked as a user's.
 */
export function checkSemantics(
  raw: unknown,
  options: { internal?: boolean; matrixTasks?: ReadonlyMap<string, readonly string[]> | undefined } = {},
): { issues: RawIssue[]; warnings: RawIssue[] } {
  const internal = options.internal ?? false;
  const matrixTasks = options.matrixTasks ?? new Map<string, readonly string[]>();
  const issues: RawIssue[] = [];
  const warnings: RawIssue[] = [];
  const tasks = looseTasks(raw);
  // "Did you mean" compares a name with every task: past a few, a file full of unknown names gets none.
  const hints = { left: MAX_DEPENDENCY_HINTS };
  const firstIndex = new Map<string, number>();
  for (const task of tasks) {
    if (task.name === undefined) continue;
    const first = firstIndex.get(task.name);
    if (first === undefined) firstIndex.set(task.name, task.index);
    else {
      issues.push({
        code: 'duplicate-task',
        path: ['tasks', task.index, 'name'],
        message: `duplicate task name "${task.name}" (first used by tasks[${first}])`,
      });
    }
  }

  for (const task of tasks) {
    const at = (...rest: PathSegment[]): PathSegment[] => ['tasks', task.index, ...rest];
    checkRefs(task, 'depends_on', task.dependsOn, firstIndex, issues, at, hints);
    checkRefs(task, 'gates', task.gates, firstIndex, issues, at, hints);
    const n = task.dependsOn.length;
    if (typeof task.depPolicy === 'number' && Number.isInteger(task.depPolicy) && task.depPolicy > n) {
      issues.push({
        code: 'bad-dep-policy',
        path: at('dep_policy'),
        message: `dep_policy ${task.depPolicy} needs at least ${task.depPolicy} dependencies, but the task has ${n}`,
      });
    }
    if (typeof task.condition === 'string') checkCondition(task, task.condition, issues, at, matrixTasks);
    const delay = retryDelayIssue(raw, task, at);
    if (delay !== null) issues.push(delay);
    if (!internal && task.kwargs) issues.push(...checkKwargs(task.kwargs, at()));
    const misspelt = internal || !task.kwargs ? [] : misspeltKwargs(task.kwargs);
    const merge = task.name !== undefined && isMergeNode(task.name, task.kwargs);
    const noCmd = !merge && lacksCmd(task.kwargs);
    for (const { key, kwarg } of misspelt) {
      // A near miss of cmd in a task without one is the reason the shell processor would fail it: one warning says both.
      const fails = noCmd && kwarg === 'cmd' && task.kwargs?.cmd === undefined;
      warnings.push({
        code: 'misspelt-kwarg',
        path: at('kwargs', key),
        target: 'key',
        message: fails
          ? `kwargs.${key} is not read by the shell processor, and without kwargs.cmd it will fail task "${task.name ?? `#${task.index}`}"`
          : `kwargs.${key} is not read by the shell processor (a task may read it itself)`,
        hint: didYouMean(kwarg),
      });
    }
    if (noCmd && !misspelt.some((m) => m.kwarg === 'cmd' && task.kwargs?.cmd === undefined)) {
      warnings.push({
        code: 'no-cmd',
        path: at(...(task.kwargs ? ['kwargs'] : [])),
        message: `task "${task.name ?? `#${task.index}`}" has ${task.kwargs?.cmd === undefined ? 'no' : 'an empty'} kwargs.cmd: the shell processor will fail it`,
      });
    }
  }

  const edges = new Map<string, string[]>();
  for (const task of tasks) {
    if (task.name === undefined || firstIndex.get(task.name) !== task.index) continue;
    edges.set(
      task.name,
      [...task.dependsOn, ...task.gates].map((r) => r.name).filter((d) => d !== task.name),
    );
  }
  if (!internal) {
    const defaultQueue = isRecord(raw) && typeof raw.default_queue === 'string' ? raw.default_queue : 'default';
    const fit = tasks.map((t) => ({
      index: t.index,
      name: t.name,
      queue: typeof t.queue === 'string' ? t.queue : undefined,
      kwargs: t.kwargs,
      hasParents: t.dependsOn.length > 0 || t.gates.length > 0,
    }));
    issues.push(...checkStorageFit(fit, defaultQueue));
  }

  const cycle = findCycle([...edges.keys()], edges);
  if (cycle) {
    const start = cycle[0]!;
    issues.push({
      code: 'cycle',
      path: ['tasks', firstIndex.get(start)!, 'depends_on'],
      message: `dependency cycle: ${cycle.join(' -> ')}`,
    });
  }
  return { issues, warnings };
}

function checkRefs(
  task: LooseTask,
  field: 'depends_on' | 'gates',
  refs: readonly NamedRef[],
  known: ReadonlyMap<string, number>,
  issues: RawIssue[],
  at: (...rest: PathSegment[]) => PathSegment[],
  hints: { left: number },
): void {
  const seen = new Set<string>();
  for (const ref of refs) {
    const path = at(field, ref.index);
    if (ref.name === task.name) {
      issues.push({ code: 'self-dependency', path, message: `task "${ref.name}" depends on itself` });
    } else if (seen.has(ref.name)) {
      issues.push({ code: 'duplicate-dependency', path, message: `"${ref.name}" is listed twice in ${field}` });
    } else if (!known.has(ref.name)) {
      const hint =
        hints.left-- > 0
          ? unknownNameHint(
              ref.name,
              [...known.keys()].filter((name) => name !== task.name),
            )
          : undefined;
      issues.push({
        code: 'unknown-dependency',
        path,
        message: `task "${task.name ?? `#${task.index}`}" depends on "${ref.name}", which is not a task of this workflow`,
        ...(hint === undefined ? {} : { hint }),
      });
    }
    seen.add(ref.name);
  }
}

/** The name an unknown-input issue of {@link compileCondition} quotes. */
function unknownInput(message: string): string | undefined {
  const quoted = /^unknown input ("(?:[^"\\]|\\.)*")/.exec(message)?.[1];
  if (quoted === undefined) return undefined;
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return undefined;
  }
}

function checkCondition(
  task: LooseTask,
  condition: string,
  issues: RawIssue[],
  at: (...rest: PathSegment[]) => PathSegment[],
  matrixTasks: ReadonlyMap<string, readonly string[]>,
): void {
  const path = at('condition');
  if (task.dependsOn.length === 0) {
    issues.push({ code: 'condition-without-deps', path, message: 'a condition needs at least one dependency to read inputs from' });
    return;
  }
  if (task.dependsOn.some((d) => d.name.startsWith(MERGE_PREFIX))) {
    issues.push({
      code: 'condition-with-fan-in',
      path,
      message: 'a condition cannot read the inputs of a task whose dependencies were split by --max-fan-in',
    });
    return;
  }
  const compiled = compileCondition(
    condition,
    task.dependsOn.map((d) => d.name),
  );
  if (compiled.ok) return;
  for (const issue of compiled.issues) {
    const input = issue.code === 'condition-unknown-input' ? unknownInput(issue.message) : undefined;
    const message =
      input !== undefined && matrixTasks.has(input)
        ? `${JSON.stringify(input)} is a matrix task (${matrixTasks.get(input)!.length} tasks): read them with a glob inside an aggregate, e.g. any(inputs["${input}(*"].accuracy > 0.9)`
        : issue.message;
    issues.push({
      code: issue.code,
      path,
      message: issue.column === undefined ? message : `${message} (column ${issue.column} of the condition)`,
      ...(issue.column === undefined ? {} : { innerColumn: issue.column }),
      ...(issue.hint === undefined ? {} : { hint: issue.hint }),
    });
  }
}

/** A field's value when it is one the model accepts here (a number in range), else undefined (the model reports it). */
function numberIn(value: unknown, min: number, max: number, integer: boolean): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) return undefined;
  return integer && !Number.isInteger(value) ? undefined : value;
}

/**
 * Retries travel with the queue's own delayed delivery, which holds a message at most 7 days: the
 * longest wait of a task's retries (its last one: the delay only grows) must fit. Each field is in
 * range on its own (the model checks that); here `retry_delay_s × retry_backoff^(num_retries − 1)`
 * without a `retry_max_delay_s` to cap it. Fields left out take the workflow's defaults.
 */
function retryDelayIssue(raw: unknown, task: LooseTask, at: (...rest: PathSegment[]) => PathSegment[]): RawIssue | null {
  const workflow = isRecord(raw) ? raw : {};
  const pick = (
    own: string,
    fallback: string,
    min: number,
    max: number,
    integer: boolean,
    dflt: number | null,
  ): number | null | undefined => {
    const value = task.raw[own] ?? workflow[fallback] ?? dflt;
    return value === null ? null : numberIn(value, min, max, integer);
  };
  const retries = numberIn(task.raw.num_retries ?? 0, 0, Number.MAX_SAFE_INTEGER, true);
  const delayS = pick('retry_delay_s', 'default_retry_delay_s', 0, MAX_RETRY_DELAY_S, true, 0);
  const backoff = pick('retry_backoff', 'default_retry_backoff', 1, Number.MAX_VALUE, false, 1);
  const maxDelayS = pick('retry_max_delay_s', 'default_retry_max_delay_s', 0, MAX_RETRY_DELAY_S, true, null);
  if (
    retries === undefined ||
    retries === 0 ||
    delayS === undefined ||
    delayS === null ||
    backoff === undefined ||
    backoff === null ||
    maxDelayS === undefined
  )
    return null;
  if (maxDelayS !== null) return null;
  const longest = delayS * Math.pow(backoff, retries - 1);
  if (longest <= MAX_RETRY_DELAY_S) return null;
  const field = ['retry_backoff', 'retry_delay_s', 'num_retries'].find((f) => task.raw[f] !== undefined && task.raw[f] !== null);
  const shown = Number.isFinite(longest) ? `${Math.round(longest)} s` : 'forever';
  return {
    code: 'bad-retry-delay',
    path: field === undefined ? at() : at(field),
    message:
      `task "${task.name ?? `#${task.index}`}": retry ${retries} would wait ${shown} (retry_delay_s ${delayS} × retry_backoff ${backoff}^${retries - 1}), ` +
      `longer than a queue can delay a message (${MAX_RETRY_DELAY_S} s, 7 days): set retry_max_delay_s, or lower retry_backoff or num_retries`,
  };
}
