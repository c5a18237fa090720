import { RateWindow, taskState, taskStatus, isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { formatElapsed, listSome, parseDurationInMs } from '@jobq/ports';
import { countsLine, layerRollup, layerTable, percentDone, statusBar, terminalOf, totalOf } from './format';
import { skipLines, skippedTasks } from './skips';

/** Times in the view tick with each redraw: seconds are shown below an hour (`3m05s`). */
const CLOCK = { seconds: true } as const;

/** `1s`, `500ms`, `2m` or a bare number of seconds, in milliseconds; null when malformed. */
export function parseInterval(text: string): number | null {
  try {
    return parseDurationInMs(text, '--interval');
  } catch {
    return null;
  }
}

export { RateWindow };

/**
 * Running tasks in definition order, with how long ago each was dispatched; a retry sent with a
 * delay that has not ended yet has `retryInMs` instead (the queue still holds it back).
 */
export function runningTasks(runtime: WorkflowRuntime, now: number): Array<{ name: string; forMs: number | null; retryInMs?: number }> {
  const out: Array<{ name: string; forMs: number | null; retryInMs?: number }> = [];
  for (const def of runtime.definition.tasks) {
    const task = taskState(runtime, def.name);
    if (task?.status !== 'running') continue;
    const dueIn = task.retryDueAt === null ? Number.NaN : Date.parse(task.retryDueAt) - now;
    if (dueIn > 0) out.push({ name: def.name, forMs: null, retryInMs: dueIn });
    else out.push({ name: def.name, forMs: task.dispatchedAt === null ? null : now - Date.parse(task.dispatchedAt) });
  }
  return out;
}

/** One running task as the watch view shows it: `train (12s)`, or `train (retry in 30s)` while its delay runs. */
function runningText(r: { name: string; forMs: number | null; retryInMs?: number }): string {
  if (r.retryInMs !== undefined) return `${r.name} (retry in ${formatElapsed(r.retryInMs, CLOCK)})`;
  return r.forMs === null ? r.name : `${r.name} (${formatElapsed(r.forMs, CLOCK)})`;
}

/** `0.50/s` (or `2.0/min` when slow). */
export function rateText(rate: number | null): string {
  if (rate === null) return '-';
  if (rate > 0 && rate < 0.1) return `${(rate * 60).toFixed(1)}/min`;
  return `${rate.toFixed(2)}/s`;
}

export interface FrameOptions {
  byLayer: boolean;
  /** Running tasks listed by name. */
  runningShown: number;
  /** Skipped tasks listed with their reasons (default 5). */
  skippedShown?: number;
  now: number;
  /** Where running tasks are, by task name (docs/design.md#placement): shown under the running line. */
  placements?: ReadonlyMap<string, string>;
}

/** The counts, as compared between refreshes: the status and every count. */
export function countsKey(runtime: WorkflowRuntime): string {
  return `${runtime.status}|${JSON.stringify(runtime.counts)}`;
}

/** How long the workflow has been going (to `finishedAt` once finished). */
export function elapsedMs(runtime: WorkflowRuntime, now: number): number {
  const end = runtime.finishedAt !== null ? Date.parse(runtime.finishedAt) : now;
  return Math.max(0, end - Date.parse(runtime.createdAt));
}

/** One line: status, bar, percent, counts, rate and ETA (the view when redrawing is not possible). */
export function progressLine(runtime: WorkflowRuntime, rate: RateWindow, now: number): string {
  const counts = runtime.counts;
  const remaining = totalOf(counts) - terminalOf(counts);
  const eta = rate.etaMs(remaining);
  const tail = isTerminalWorkflowStatus(runtime.status)
    ? ''
    : `  ${rateText(rate.rate())}  ETA ${eta === null ? '?' : formatElapsed(eta, CLOCK)}`;
  return `${runtime.status.padEnd(10)} ${statusBar(counts, 30)} ${percentDone(counts).padStart(4)}  ${countsLine(counts)}${tail}  (${formatElapsed(elapsedMs(runtime, now), CLOCK)})`;
}

/**
 * The full view: a header, the bar, rate and ETA, the first running tasks, the first skipped
 * tasks with their reasons and, optionally, the layers.
 */
export function frameLines(runtime: WorkflowRuntime, rate: RateWindow, options: FrameOptions): string[] {
  const counts = runtime.counts;
  const total = totalOf(counts);
  const done = terminalOf(counts);
  const eta = rate.etaMs(total - done);
  const lines = [
    `${runtime.definition.name} (${runtime.workflowId})  ${runtime.status}${runtime.cancelRequested && runtime.status !== 'cancelled' ? ' (cancel requested)' : ''}  ${formatElapsed(elapsedMs(runtime, options.now), CLOCK)}`,
    `${statusBar(counts, 50)} ${percentDone(counts)}  ${done}/${total}`,
    `${countsLine(counts)}`,
  ];
  if (!isTerminalWorkflowStatus(runtime.status))
    lines.push(`rate ${rateText(rate.rate())}  ETA ${eta === null ? '?' : formatElapsed(eta, CLOCK)}`);
  const running = runningTasks(runtime, options.now);
  if (running.length > 0) {
    lines.push(`running: ${listSome(running, options.runningShown, runningText)}`);
    for (const r of running.slice(0, options.runningShown)) {
      const placed = options.placements?.get(r.name);
      if (placed !== undefined) lines.push(`  ${r.name}: ${placed}`);
    }
  }
  const skipped = skippedTasks(runtime);
  lines.push(...skipLines(skipped, { prefix: 'skipped: ', limit: options.skippedShown ?? 5, more: 'jobq workflow status lists them' }));
  if (options.byLayer) {
    const rows = layerRollup(runtime.definition.tasks.map((t) => ({ taskName: t.name, status: taskStatus(runtime, t.name) })));
    lines.push('', ...layerTable(rows).split('\n'));
  }
  return lines;
}

/**
 * A block of lines on a stream: on a terminal each frame replaces the previous one in place
 * (cursor up, clear to the end of the screen); elsewhere frames are written one after the other.
 */
export class LiveBlock {
  private height = 0;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly redraw: boolean,
  ) {}

  show(lines: readonly string[]): void {
    if (!this.redraw) {
      this.stream.write(`${lines.join('\n')}\n`);
      return;
    }
    const width = this.stream.columns > 0 ? this.stream.columns : 120;
    const fitted = lines.map((l) => (l.length >= width ? `${l.slice(0, width - 2)}…` : l));
    const up = this.height > 0 ? `\x1b[${this.height}F\x1b[J` : '';
    this.stream.write(`${up}${fitted.join('\n')}\n`);
    this.height = fitted.length;
  }
}
