import { odata, type TableEntity, type TableEntityResult } from '@azure/data-tables';
import {
  TASK_STATUSES,
  WORKFLOW_STATUSES,
  taskQueue,
  type TaskStatus,
  type WorkflowDefinition,
  type WorkflowRuntime,
  type WorkflowStatus,
  taskState,
} from '@jobq/dag-core';
import { JobqError, type WorkflowSummary } from '@jobq/ports';
import { indexPartition } from './names';

/**
 * The workflow index (`{PREFIX}WorkflowsIndex`, docs/design.md#storage-layout): PartitionKey = 16-way hash bucket of the
 * id, RowKey = the id. Properties are snake_case; "none" is stored as `''` (a Merge never has to
 * send a null). `cancel_requested_at` and `retry_requested_at` are written only by the request
 * methods; every other property only by create and save.
 */

/** Property holding the number of tasks in a status. */
export const COUNT_PROPERTY: Readonly<Record<TaskStatus, string>> = Object.fromEntries(
  TASK_STATUSES.map((s) => [s, `count_${s}`]),
) as Record<TaskStatus, string>;

export const CANCEL_REQUESTED = 'cancel_requested_at';
export const RETRY_REQUESTED = 'retry_requested_at';

/** Longest error text kept in a row: table properties hold 32 K characters, a batch 4 MiB. */
export const MAX_ROW_ERROR_CHARS = 2_000;

/** An error for a row: kept whole up to {@link MAX_ROW_ERROR_CHARS}, else cut with a marker. The blob keeps it whole. */
export function shortenError(error: string | null): string {
  if (error === null) return '';
  return error.length <= MAX_ROW_ERROR_CHARS ? error : `${error.slice(0, MAX_ROW_ERROR_CHARS - 1)}…`;
}

const queuesCache = new WeakMap<WorkflowDefinition, string>();

/** The queue specs a definition uses, sorted, as a JSON array (cached per definition object: saves share it). */
export function queuesJson(definition: WorkflowDefinition): string {
  let json = queuesCache.get(definition);
  if (json === undefined) {
    json = JSON.stringify([...new Set(definition.tasks.map((t) => taskQueue(definition, t)))].sort());
    queuesCache.set(definition, json);
  }
  return json;
}

/** A failed workflow's error: its first failed task (definition order) and that task's error; a corrupt one's reason. */
export function workflowError(runtime: WorkflowRuntime): string {
  if (runtime.corruptReason !== null) return shortenError(`corrupt: ${runtime.corruptReason}`);
  if (runtime.status !== 'failed' || runtime.counts.failed === 0) return '';
  for (const task of runtime.definition.tasks) {
    const state = taskState(runtime, task.name);
    if (state?.status === 'failed') return shortenError(`task "${task.name}" failed${state.error ? `: ${state.error}` : ''}`);
  }
  return '';
}

/** The derived properties of a workflow's index row, as create and save write them (Merge). */
export function indexEntity(runtime: WorkflowRuntime, definitionHash?: string): TableEntity<Record<string, string | number>> {
  const entity: TableEntity<Record<string, string | number>> = {
    partitionKey: indexPartition(runtime.workflowId),
    rowKey: runtime.workflowId,
    name: runtime.definition.name,
    status: runtime.status,
    task_count: runtime.definition.tasks.length,
    queues: queuesJson(runtime.definition),
    created_at: runtime.createdAt,
    updated_at: runtime.updatedAt,
    finished_at: runtime.finishedAt ?? '',
    cancel_applied_at: runtime.cancelAppliedAt ?? '',
    retry_applied_at: runtime.retryAppliedAt ?? '',
    error: workflowError(runtime),
  };
  for (const status of TASK_STATUSES) entity[COUNT_PROPERTY[status]] = runtime.counts[status];
  if (definitionHash !== undefined) entity.definition_hash = definitionHash;
  return entity;
}

type Row = Readonly<Record<string, unknown>>;

function text(row: Row, key: string): string {
  const value = row[key];
  return typeof value === 'string' ? value : '';
}

function orNull(value: string): string | null {
  return value === '' ? null : value;
}

/** Orders two ISO-8601 timestamps (as instants when both parse, else as text): negative when `a` is earlier. */
export function compareTimes(a: string, b: string): number {
  const ta = Date.parse(a);
  const tb = Date.parse(b);
  if (Number.isFinite(ta) && Number.isFinite(tb) && ta !== tb) return ta - tb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** True when timestamp `a` is later than `b`. */
export function isLater(a: string, b: string): boolean {
  return compareTimes(a, b) > 0;
}

/**
 * The status the index shows: what the last save wrote, except `pending` while a retry request is
 * not yet applied and no newer cancel request overtook it (never for a `corrupt` workflow).
 */
export function indexStatus(row: Row): WorkflowStatus | null {
  const saved = text(row, 'status');
  if (!WORKFLOW_STATUSES.includes(saved as WorkflowStatus)) return null;
  if (saved === 'corrupt') return 'corrupt';
  const retryRequested = text(row, RETRY_REQUESTED);
  const retryApplied = text(row, 'retry_applied_at');
  const cancelRequested = text(row, CANCEL_REQUESTED);
  const retryWaiting = retryRequested !== '' && (retryApplied === '' || isLater(retryRequested, retryApplied));
  const overtaken = cancelRequested !== '' && isLater(cancelRequested, retryRequested);
  return retryWaiting && !overtaken ? 'pending' : (saved as WorkflowStatus);
}

/** The index properties that set a workflow aside as corrupt (a Merge: counts and names stay). */
export function corruptEntity(workflowId: string, reason: string, at: string): TableEntity<Record<string, string>> {
  return {
    partitionKey: indexPartition(workflowId),
    rowKey: workflowId,
    status: 'corrupt',
    error: shortenError(`corrupt: ${reason}`),
    updated_at: at,
    finished_at: at,
  };
}

/** A row as a {@link WorkflowSummary}; null for a row without the derived properties (never written by a save). */
export function summaryOf(row: TableEntityResult<Record<string, unknown>>): WorkflowSummary | null {
  const status = indexStatus(row);
  if (status === null) return null;
  const counts = Object.fromEntries(
    TASK_STATUSES.map((s) => {
      const n = row[COUNT_PROPERTY[s]];
      return [s, typeof n === 'number' ? n : 0];
    }),
  ) as Record<TaskStatus, number>;
  let queues: string[] = [];
  try {
    const parsed: unknown = JSON.parse(text(row, 'queues') || '[]');
    if (Array.isArray(parsed)) queues = parsed.filter((q): q is string => typeof q === 'string');
  } catch {
    queues = [];
  }
  return {
    workflowId: row.rowKey ?? '',
    name: text(row, 'name'),
    status,
    counts,
    queues,
    definitionHash: text(row, 'definition_hash'),
    createdAt: text(row, 'created_at'),
    updatedAt: text(row, 'updated_at'),
    cancelRequestedAt: orNull(text(row, CANCEL_REQUESTED)),
    retryRequestedAt: orNull(text(row, RETRY_REQUESTED)),
    cancelAppliedAt: orNull(text(row, 'cancel_applied_at')),
    retryAppliedAt: orNull(text(row, 'retry_applied_at')),
    finishedAt: orNull(text(row, 'finished_at')),
    error: orNull(text(row, 'error')),
  };
}

/** `(status eq 'a' or status eq 'b')`, escaped; undefined for no statuses. */
export function statusFilter(statuses: readonly string[] | undefined): string | undefined {
  if (!statuses || statuses.length === 0) return undefined;
  return `(${statuses.map((s) => odata`status eq ${s}`).join(' or ')})`;
}

/** The statuses a workflow ends in: a saved one of these is finished. */
const FINAL_STATUSES = WORKFLOW_STATUSES.filter((s) => s === 'completed' || s === 'failed' || s === 'cancelled' || s === 'corrupt');

/**
 * A time as the index stores it (`Date.prototype.toISOString`, which sorts as text), for
 * comparisons in filters; `invalid-argument` for anything that is not a time.
 */
export function indexTime(at: string, what: string): string {
  const ms = typeof at === 'string' ? Date.parse(at) : Number.NaN;
  if (!Number.isFinite(ms))
    throw new JobqError('invalid-argument', `${what} must be an ISO-8601 timestamp, got ${JSON.stringify(String(at).slice(0, 100))}`);
  return new Date(ms).toISOString();
}

/** `updated_at` earlier than `at`. */
export function updatedBeforeFilter(at: string): string {
  return odata`updated_at lt ${indexTime(at, 'updatedBefore')}`;
}

/** A saved final status, and `finished_at` earlier than `at` (`updated_at` for a row that has none). */
export function finishedBeforeFilter(at: string): string {
  const cutoff = indexTime(at, 'finishedBefore');
  return `${statusFilter(FINAL_STATUSES)} and (${odata`(finished_at ne '' and finished_at lt ${cutoff})`} or ${odata`(finished_at eq '' and updated_at lt ${cutoff})`})`;
}

/** The conditions joined with `and` (each in parentheses); undefined for none. */
export function allOf(conditions: ReadonlyArray<string | undefined>): string | undefined {
  const present = conditions.filter((c): c is string => c !== undefined && c !== '');
  if (present.length === 0) return undefined;
  return present.length === 1 ? present[0] : present.map((c) => `(${c})`).join(' and ');
}

/** Newest `updated_at` first; then newest `created_at`; then id. */
export function byRecent(a: WorkflowSummary, b: WorkflowSummary): number {
  return (
    compareTimes(b.updatedAt, a.updatedAt) ||
    compareTimes(b.createdAt, a.createdAt) ||
    (a.workflowId < b.workflowId ? -1 : a.workflowId > b.workflowId ? 1 : 0)
  );
}
