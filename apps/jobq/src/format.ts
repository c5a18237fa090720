import { TASK_STATUSES, layerOf, type TaskStatus } from '@jobq/dag-core';
import type { TaskRow, WorkflowSummary } from '@jobq/ports';

/** Per-status task counts, as on an index row or a runtime. */
export type StatusCounts = Record<TaskStatus, number>;

/** A column of {@link table}: its header and whether it is right-aligned (numbers). */
export interface Column {
  header: string;
  right?: boolean;
}

/** Text shortened to `max` characters, ending in `…` when cut. */
export function truncate(text: string, max: number): string {
  const single = text.replace(/\s*\n\s*/g, ' ');
  if (max < 1) return '';
  return single.length <= max ? single : `${single.slice(0, max - 1)}…`;
}

/** A plain-text table: a header row, a rule, then the rows; columns padded to their widest cell. */
export function table(columns: readonly (Column | string)[], rows: readonly (readonly string[])[]): string {
  const cols = columns.map((c) => (typeof c === 'string' ? { header: c } : c));
  const widths = cols.map((c, i) => Math.max(c.header.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cols
      .map((c, i) => {
        const cell = cells[i] ?? '';
        const width = widths[i] ?? 0;
        return c.right ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return [line(cols.map((c) => c.header)), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/**
 * `text` in pieces of at most `width` characters, each broken after a `;` or `&` when one falls in
 * its second half (connection strings, SAS tokens), else after a `=` there, else at `width`.
 */
export function wrapText(text: string, width: number): string[] {
  const w = Math.max(1, Math.floor(width));
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > w) {
    const window = rest.slice(0, w);
    const half = Math.floor(w / 2);
    const at = Math.max(window.lastIndexOf(';'), window.lastIndexOf('&'));
    const equals = window.lastIndexOf('=');
    const cut = at >= half ? at + 1 : equals >= half ? equals + 1 : w;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  pieces.push(rest);
  return pieces;
}

/** The narrowest a wrapped column gets, however narrow the terminal: below that, lines run over. */
export const MIN_WRAPPED_WIDTH = 20;

/**
 * {@link table} fitted to a terminal `width` (null: not a terminal, nothing changes): cells of
 * column `wrap` too long for the room the other columns leave are wrapped onto continuation rows
 * (the other cells of those rows empty), never narrower than {@link MIN_WRAPPED_WIDTH}.
 */
export function fittedTable(
  columns: readonly (Column | string)[],
  rows: readonly (readonly string[])[],
  options: { wrap: number; width: number | null },
): string {
  if (options.width === null || !(options.width > 0)) return table(columns, rows);
  const headers = columns.map((c) => (typeof c === 'string' ? c : c.header));
  const others = headers.reduce(
    (sum, header, i) => (i === options.wrap ? sum : sum + Math.max(header.length, ...rows.map((r) => (r[i] ?? '').length))),
    0,
  );
  const room = Math.max(MIN_WRAPPED_WIDTH, options.width - others - 2 * (headers.length - 1));
  const fitted: string[][] = [];
  for (const row of rows) {
    const pieces = wrapText(row[options.wrap] ?? '', room);
    pieces.forEach((piece, n) => fitted.push(row.map((cell, i) => (i === options.wrap ? piece : n === 0 ? cell : ''))));
  }
  return table(columns, fitted);
}

/** Sum of every count. */
export function totalOf(counts: StatusCounts): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** Tasks in a terminal status. */
export function terminalOf(counts: StatusCounts): number {
  return counts.completed + counts.failed + counts.upstream_failed + counts.skipped + counts.cancelled;
}

/** Failed tasks in the broad sense: failed, upstream_failed and cancelled. */
export function failedOf(counts: StatusCounts): number {
  return counts.failed + counts.upstream_failed + counts.cancelled;
}

/**
 * A progress bar of `width` characters: `#` completed, `X` failed/upstream_failed/cancelled,
 * `-` skipped, `>` running, `.` pending or ready.
 */
export function statusBar(counts: StatusCounts, width = 50): string {
  const total = totalOf(counts);
  if (total === 0) return `[${' '.repeat(width)}]`;
  const segments: Array<{ char: string; n: number; cells: number }> = [
    { char: '#', n: counts.completed, cells: 0 },
    { char: 'X', n: failedOf(counts), cells: 0 },
    { char: '-', n: counts.skipped, cells: 0 },
    { char: '>', n: counts.running, cells: 0 },
    { char: '.', n: counts.pending + counts.ready, cells: 0 },
  ];
  // Proportional, but a non-empty group always gets at least one cell; rounding is settled on the largest group.
  for (const seg of segments) seg.cells = seg.n > 0 ? Math.max(1, Math.round((seg.n / total) * width)) : 0;
  const largest = (): { cells: number } => segments.reduce((a, b) => (b.cells > a.cells ? b : a));
  let sum = segments.reduce((acc, seg) => acc + seg.cells, 0);
  while (sum > width && largest().cells > 1) {
    largest().cells--;
    sum--;
  }
  if (sum < width) largest().cells += width - sum;
  return `[${segments.map((seg) => seg.char.repeat(seg.cells)).join('')}]`;
}

/** A bar of `done` of `total` in `width` characters. */
export function fractionBar(done: number, total: number, width = 30): string {
  const filled = total <= 0 ? width : Math.min(width, Math.floor((done / total) * width));
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

/** `N%` of terminal tasks. */
export function percentDone(counts: StatusCounts): string {
  const total = totalOf(counts);
  return total === 0 ? '100%' : `${Math.floor((terminalOf(counts) / total) * 100)}%`;
}

/**
 * `c/t done, f fail[, s skip][, x cancelled]`: the progress column of `workflow list`. `fail`
 * counts failed and upstream_failed tasks; cancelled ones are counted apart (a cancel is asked
 * for, not a failure).
 */
export function progressText(counts: StatusCounts): string {
  const parts = [`${counts.completed}/${totalOf(counts)} done`, `${counts.failed + counts.upstream_failed} fail`];
  if (counts.skipped > 0) parts.push(`${counts.skipped} skip`);
  if (counts.cancelled > 0) parts.push(`${counts.cancelled} cancelled`);
  return parts.join(', ');
}

/** The non-zero counts in lifecycle order, e.g. `pending 2, running 1, completed 3`; `no tasks` when none. */
export function countsLine(counts: Partial<Record<TaskStatus, number>>, separator = ', '): string {
  const parts = TASK_STATUSES.filter((s) => (counts[s] ?? 0) > 0).map((s) => `${s} ${counts[s] ?? 0}`);
  return parts.length === 0 ? 'no tasks' : parts.join(separator);
}

/** The layer of a task (the `--by-layer` rollup): its name without a trailing `-NNN` (3 or more digits, optional `_N`). */
export { layerOf };

/** One row of the `--by-layer` rollup. */
export interface LayerRow {
  layer: string;
  total: number;
  pending: number;
  ready: number;
  running: number;
  completed: number;
  /** failed + upstream_failed + cancelled. */
  failed: number;
  skipped: number;
}

/** Task rows grouped by {@link layerOf}, layers in order of first appearance. */
export function layerRollup(tasks: readonly Pick<TaskRow, 'taskName' | 'status'>[]): LayerRow[] {
  const layers = new Map<string, LayerRow>();
  for (const task of tasks) {
    const name = layerOf(task.taskName);
    let row = layers.get(name);
    if (!row) {
      row = { layer: name, total: 0, pending: 0, ready: 0, running: 0, completed: 0, failed: 0, skipped: 0 };
      layers.set(name, row);
    }
    row.total++;
    switch (task.status) {
      case 'pending':
      case 'ready':
      case 'running':
      case 'completed':
      case 'skipped':
        row[task.status]++;
        break;
      case 'failed':
      case 'upstream_failed':
      case 'cancelled':
        row.failed++;
        break;
    }
  }
  return [...layers.values()];
}

/** The `--by-layer` table. */
export function layerTable(rows: readonly LayerRow[]): string {
  const n = (v: number): string => String(v);
  return table(
    [
      'Layer',
      { header: 'Total', right: true },
      { header: 'Pending', right: true },
      { header: 'Ready', right: true },
      { header: 'Running', right: true },
      { header: 'Completed', right: true },
      { header: 'Failed', right: true },
      { header: 'Skipped', right: true },
      'Progress',
    ],
    rows.map((r) => [
      r.layer,
      n(r.total),
      n(r.pending),
      n(r.ready),
      n(r.running),
      n(r.completed),
      n(r.failed),
      n(r.skipped),
      fractionBar(r.completed + r.failed + r.skipped, r.total, 16),
    ]),
  );
}

/** What the task table shows of a task. */
export type TaskLine = Pick<TaskRow, 'taskName' | 'status' | 'queue' | 'attemptNo' | 'error'> & { workflowId?: string };

/** The task table of `workflow status` and `workflow tasks`: [Workflow/]Task/Status/Queue/Attempt/Error. */
export function taskTable(
  tasks: readonly TaskLine[],
  options: { verbose?: boolean; errorWidth?: number; withWorkflow?: boolean } = {},
): string {
  const width = options.errorWidth ?? 38;
  const error = (t: TaskLine): string =>
    t.error === null ? '' : options.verbose ? t.error.replace(/\s*\n\s*/g, ' ') : truncate(t.error, width);
  const columns: Array<Column | string> = ['Task', 'Status', 'Queue', { header: 'Attempt', right: true }, 'Error'];
  const rows = tasks.map((t) => [t.taskName, t.status, t.queue, String(t.attemptNo), error(t)]);
  if (!options.withWorkflow) return table(columns, rows);
  return table(
    ['Workflow', ...columns],
    rows.map((r, i) => [tasks[i]?.workflowId ?? '', ...r]),
  );
}

/** The table of `workflow list`: ID/Name/Status/Progress/Updated. */
export function workflowTable(workflows: readonly WorkflowSummary[]): string {
  return table(
    ['ID', 'Name', 'Status', 'Progress', 'Updated'],
    workflows.map((w) => [w.workflowId, truncate(w.name, 40), w.status, progressText(w.counts), w.updatedAt]),
  );
}
