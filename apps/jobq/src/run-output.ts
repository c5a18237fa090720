import {
  TASK_STATUSES,
  freshTask,
  isMergeNode,
  isTerminalTaskStatus,
  taskQueue,
  taskState,
  type TaskRuntime,
  type TaskStatus,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import type { TaskLine, TaskRef } from '@jobq/worker';
import type { ProgressReporter } from './progress';

/**
 * How much `jobq workflow run` prints on stderr (docs/cli.md): `quiet` the progress line, problems
 * and the summary; `normal` also the setup lines, the tasks' output lines and the local
 * coordinator's and workers' own lines (but their routine lines about each task); `verbose` also
 * every task event and those routine lines.
 */
export type Verbosity = 'quiet' | 'normal' | 'verbose';

/** `train#2`: a task and its attempt; the task id for a task that is not a workflow task. */
export function taskLabel(task: TaskRef): string {
  return task.workflowTask === null ? task.id : `${task.workflowTask.taskName}#${task.workflowTask.attemptNo}`;
}

/** The worker's routine lines about a task (see packages/worker): shown only with --verbose. */
const ROUTINE_WORKER_LINES = [/^started \(/, /^done$/, /^completion sent: /, /^merge node "[^"]*": completed without running anything$/];

/** True for a worker's line about a task that only says it goes as it should (started, done, completion sent). */
export function isRoutineWorkerLine(text: string): boolean {
  return ROUTINE_WORKER_LINES.some((re) => re.test(text));
}

/** Where every line of a run goes, by kind, at a {@link Verbosity}. */
export class RunOutput {
  constructor(
    private readonly progress: ProgressReporter,
    readonly verbosity: Verbosity,
  ) {}

  /** Problems, warnings and what Ctrl-C does: always shown. */
  problem(line: string): void {
    this.progress.log(line);
  }

  /** What the run sets up (embedded stack, workers, the submitted id): not with --quiet. */
  info(line: string): void {
    if (this.verbosity !== 'quiet') this.progress.log(line);
  }

  /** A log line of the local coordinator or of a worker (not about one task): not with --quiet. */
  service(source: string, line: string): void {
    if (this.verbosity !== 'quiet') this.progress.log(`[${source}] ${line}`);
  }

  /**
   * A line about one task from a local worker: what the task printed (`[train#2] epoch 3`, not
   * with --quiet) or the worker's own line about it (`[worker cpu] [train#2] lock lost …`, not
   * with --quiet; its routine lines — started, done, completion sent — only with --verbose). The worker hands over whole lines: a partial line is kept per task and stream
   * until its newline or the end of the task.
   */
  task(queue: string, line: TaskLine): void {
    if (line.stream === null) {
      const shown = this.verbosity === 'verbose' || (this.verbosity === 'normal' && !isRoutineWorkerLine(line.text));
      if (shown) this.progress.log(`[worker ${queue}] [${taskLabel(line.task)}] ${line.text}`);
    } else if (this.verbosity !== 'quiet') {
      this.progress.log(`[${taskLabel(line.task)}] ${line.text}`);
    }
  }

  /** A task event read from the runtime (dispatched, completed, failed, retrying …): only with --verbose. */
  event(line: string): void {
    if (this.verbosity === 'verbose') this.progress.log(line);
  }
}

/** A task with no record in the runtime yet. */
const NO_STATE: TaskRuntime = freshTask('pending', 0);

/** Seconds until `at` from `now`, as `12s` (at least 1). */
function secondsUntil(at: string, now: number): string {
  return `${Math.max(1, Math.ceil((Date.parse(at) - now) / 1000))}s`;
}

/**
 * The task events between two reads of a runtime (`before` null: the first read), in definition
 * order, merge nodes left out: `train#1 dispatched to cpu`, `train#1 failed: exit code 1;
 * retrying`, `train#2 waits 30s for its retry delay`, `train#2 completed`, `report skipped:
 * condition false: …`. Changes between two reads that left no trace in the second (an attempt
 * that started and ended in between) are told from what the second holds.
 */
export function taskEvents(before: WorkflowRuntime | null, after: WorkflowRuntime, now: number): string[] {
  const lines: string[] = [];
  for (const def of after.definition.tasks) {
    if (isMergeNode(def.name, def.kwargs)) continue;
    const was = (before === null ? undefined : taskState(before, def.name)) ?? NO_STATE;
    const is = taskState(after, def.name) ?? NO_STATE;
    if (was.status === is.status && was.attemptNo === is.attemptNo) continue;
    const name = def.name;
    if (is.attemptNo > was.attemptNo) {
      // The attempt before ended without success (a failure, or a lost task) and was retried,
      // unless that was told already (seen `ready` with its error) or the task had ended (a re-run).
      const toldAlready = was.status === 'ready' && was.error !== null && was.attemptNo === is.attemptNo - 1;
      const rerun = was.attemptNo > 0 && isTerminalTaskStatus(was.status);
      if (is.attemptNo > 1 && !toldAlready && !rerun) {
        // The error of that attempt is still there while the retry runs; a later outcome replaces it.
        const error = is.status === 'running' || is.status === 'ready' ? is.error : null;
        lines.push(`${name}#${is.attemptNo - 1} failed${error === null ? '' : `: ${error}`}; retrying`);
      }
      if (is.status === 'running' && is.retryDueAt !== null && Date.parse(is.retryDueAt) > now) {
        lines.push(
          `${name}#${is.attemptNo} waits ${secondsUntil(is.retryDueAt, now)} for its retry delay (queue ${taskQueue(after.definition, def)})`,
        );
      } else {
        lines.push(`${name}#${is.attemptNo} dispatched to ${taskQueue(after.definition, def)}`);
      }
    }
    if (is.status === was.status && is.attemptNo === was.attemptNo) continue;
    const label = `${name}#${is.attemptNo}`;
    switch (is.status) {
      case 'ready':
        if (is.error !== null && is.attemptNo > 0) lines.push(`${label} failed: ${is.error}; retrying`);
        break;
      case 'completed':
        lines.push(`${label} completed`);
        break;
      case 'failed':
        lines.push(`${label} failed: ${is.error ?? 'no error recorded'}`);
        break;
      case 'skipped':
        lines.push(`${name} skipped: ${is.error ?? 'no reason recorded'}`);
        break;
      case 'upstream_failed':
        lines.push(`${name} upstream_failed${is.error === null ? '' : `: ${is.error}`}`);
        break;
      case 'cancelled':
        lines.push(`${is.attemptNo > 0 ? label : name} cancelled`);
        break;
      default:
        break;
    }
  }
  return lines;
}

/**
 * Running tasks of `runtime` whose retry waits for its delay, by name, with the time (ms since
 * the epoch) it is due: `workflow run` counts them as `waiting`, not `running`.
 */
export function waitingRetries(runtime: WorkflowRuntime, now: number): Map<string, number> {
  const waiting = new Map<string, number>();
  for (const def of runtime.definition.tasks) {
    const task = taskState(runtime, def.name);
    if (task?.status !== 'running' || task.retryDueAt === null) continue;
    const due = Date.parse(task.retryDueAt);
    if (due > now) waiting.set(def.name, due);
  }
  return waiting;
}

/** `running 2 · waiting 1 · completed 3`: counts in lifecycle order, `waiting` retries taken out of `running`. */
export function countsWithWaiting(counts: Partial<Record<TaskStatus, number>>, waiting: number): string {
  const w = Math.min(Math.max(0, waiting), counts.running ?? 0);
  const parts: string[] = [];
  for (const status of TASK_STATUSES) {
    const n = (counts[status] ?? 0) - (status === 'running' ? w : 0);
    if (n > 0) parts.push(`${status} ${n}`);
    if (status === 'running' && w > 0) parts.push(`waiting ${w}`);
  }
  return parts.length === 0 ? 'no tasks' : parts.join(' · ');
}

/** One failed task of the summary. */
export interface FailedTask {
  name: string;
  attemptNo: number;
  error: string | null;
}

/** `  failed: NAME (attempt N): ERROR` for the first `limit`, then `  … and N more failed (MORE)`. */
export function failureLines(failed: readonly FailedTask[], options: { limit: number; more: string }): string[] {
  const shown = failed.slice(0, options.limit);
  const lines = shown.map((f) => `  failed: ${f.name} (attempt ${f.attemptNo}): ${f.error ?? 'no error recorded'}`);
  if (failed.length > shown.length) lines.push(`  … and ${failed.length - shown.length} more failed (${options.more})`);
  return lines;
}
