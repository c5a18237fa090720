import {
  TASK_STATUSES,
  WORKFLOW_STATUSES,
  changedTasks,
  isTerminalWorkflowStatus,
  isValidWorkflowId,
  shardOf,
  taskCount,
  taskQueue,
  taskState,
  type TaskRuntime,
  type TaskStatus,
  type WorkflowDefinition,
  type WorkflowRuntime,
  type WorkflowStatus,
} from '@jobq/dag-core';
import {
  JobqError,
  checkShardFilter,
  isValidRerunRequestId,
  type AcquireLeaseOptions,
  type CoordinatorLease,
  type CoordinatorLeaseState,
  type CoordinatorStats,
  type CoordinatorStatsOptions,
  type CreateResult,
  type LoadedRuntime,
  type OperationOptions,
  type Page,
  type PurgeOptions,
  type PurgeResult,
  type NewRerunRequest,
  type RequestFilter,
  type RerunFilter,
  type RerunRequest,
  type SaveOptions,
  type SaveResult,
  type ShardFilter,
  type TaskFilter,
  type TaskRow,
  type TaskRowsResult,
  type WorkflowFilter,
  type WorkflowRequest,
  type WorkflowStore,
  type WorkflowSummary,
} from '@jobq/ports';
import { decodeCursor, encodeCursor, firstAfter, pageLimit } from './paging';
import { SortedIds } from './sorted-ids';

/** Longest error text kept in a row (as the Azure index and task tables keep it). */
export const MAX_ROW_ERROR_CHARS = 2_000;

const DEFAULT_WORKFLOW_PAGE = 100;
const DEFAULT_TASK_PAGE = 1_000;
const DEFAULT_REQUEST_PAGE = 1_000;

/** The statuses a workflow ends in: a saved one of these is finished. */
const FINAL_STATUSES: readonly WorkflowStatus[] = WORKFLOW_STATUSES.filter(isTerminalWorkflowStatus);

/** An error for a row: whole up to {@link MAX_ROW_ERROR_CHARS}, else cut with a marker; null for none. */
function shortenError(error: string | null): string | null {
  if (error === null || error === '') return null;
  return error.length <= MAX_ROW_ERROR_CHARS ? error : `${error.slice(0, MAX_ROW_ERROR_CHARS - 1)}…`;
}

/** Orders two ISO-8601 timestamps (as instants when both parse, else as text): negative when `a` is earlier. */
function compareTimes(a: string, b: string): number {
  const ta = Date.parse(a);
  const tb = Date.parse(b);
  if (Number.isFinite(ta) && Number.isFinite(tb) && ta !== tb) return ta - tb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Newest `updatedAt` first; then newest `createdAt`; then id (the Azure store's `recent` order). */
function byRecent(a: IndexRow, b: IndexRow): number {
  return (
    compareTimes(b.updatedAt, a.updatedAt) ||
    compareTimes(b.createdAt, a.createdAt) ||
    (a.workflowId < b.workflowId ? -1 : a.workflowId > b.workflowId ? 1 : 0)
  );
}

function checkWorkflowId(workflowId: string): void {
  if (!isValidWorkflowId(workflowId)) {
    throw new JobqError('invalid-argument', 'a workflow id is 1–128 letters, digits, ".", "_" and "-", starting with a letter or digit');
  }
}

function checkTimestamp(at: string, what: string): void {
  if (typeof at !== 'string' || !Number.isFinite(Date.parse(at)))
    throw new JobqError('invalid-argument', `${what} must be an ISO-8601 timestamp`);
}

/** A time of a filter, checked (`invalid-argument` for anything that is not a time, as the Azure store says it). */
function filterTime(at: string | undefined, what: string): string | undefined {
  if (at === undefined) return undefined;
  if (typeof at !== 'string' || !Number.isFinite(Date.parse(at))) {
    throw new JobqError('invalid-argument', `${what} must be an ISO-8601 timestamp, got ${JSON.stringify(String(at).slice(0, 100))}`);
  }
  return at;
}

function checkAborted(options: OperationOptions | undefined, operation: string): void {
  if (options?.abortSignal?.aborted) throw new JobqError('aborted', `${operation} was aborted by the caller`);
}

/** Per definition object: task name → queue spec, and the sorted queue list (built once; saves share them). */
interface DefinitionFacts {
  queueOf: ReadonlyMap<string, string>;
  queues: readonly string[];
}
const factsCache = new WeakMap<WorkflowDefinition, DefinitionFacts>();

function factsOf(definition: WorkflowDefinition): DefinitionFacts {
  let facts = factsCache.get(definition);
  if (facts === undefined) {
    const queueOf = new Map(definition.tasks.map((t) => [t.name, taskQueue(definition, t)] as const));
    facts = { queueOf, queues: [...new Set(queueOf.values())].sort() };
    factsCache.set(definition, facts);
  }
  return facts;
}

/** A failed workflow's error: its first failed task (definition order) and that task's error; a corrupt one's reason. */
function workflowError(runtime: WorkflowRuntime): string | null {
  if (runtime.corruptReason !== null) return shortenError(`corrupt: ${runtime.corruptReason}`);
  if (runtime.status !== 'failed' || runtime.counts.failed === 0) return null;
  for (const task of runtime.definition.tasks) {
    const state = taskState(runtime, task.name);
    if (state?.status === 'failed') return shortenError(`task "${task.name}" failed${state.error ? `: ${state.error}` : ''}`);
  }
  return null;
}

/** One index row, as the Azure index keeps it (the saved status; `shown` is what listings see). */
interface IndexRow {
  readonly workflowId: string;
  name: string;
  saved: WorkflowStatus;
  shown: WorkflowStatus;
  counts: Record<TaskStatus, number>;
  queues: readonly string[];
  definitionHash: string;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  cancelRequestedAt: string | null;
  retryRequestedAt: string | null;
  cancelAppliedAt: string | null;
  retryAppliedAt: string | null;
  error: string | null;
}

/** A task row: the task's state object of the save that wrote it (shared with that runtime, never copied). */
interface TaskRowRef {
  state: TaskRuntime;
  updatedAt: string;
}

interface WorkflowRows {
  readonly rows: Map<string, TaskRowRef>;
  queueOf: ReadonlyMap<string, string>;
  /** Task names in key order, made on the first listing that needs them. */
  sorted: string[] | null;
}

/** A workflow's request row: the request times, and the version {@link MemoryWorkflowStore.clearRequest} checks. */
interface RequestRow {
  cancelRequestedAt: string | null;
  retryRequestedAt: string | null;
  etag: string;
}

/** A re-run request's record, and the version {@link MemoryWorkflowStore.clearRerun} checks. */
interface RerunRecord {
  request: NewRerunRequest;
  etag: string;
}

/** The key of a re-run record, as the Azure store's row key: `{workflowId}~{requestId}` (neither has a `~`). */
function rerunKey(workflowId: string, requestId: string): string {
  return `${workflowId}~${requestId}`;
}

/** What {@link MemoryWorkflowStore.purge} decides on, and why not (reason null: go ahead). */
interface PurgeVerdict {
  status: WorkflowStatus;
  finishedAt: string | null;
  updatedAt: string;
  /** The ETag to delete the runtime at (null: an unreadable runtime, as it is); undefined when there is no runtime left. */
  etag: string | null | undefined;
  taskRows: number;
  reason: string | null;
}

interface StoredRuntime {
  runtime: WorkflowRuntime;
  etag: string;
  /** Set by {@link MemoryWorkflowStore.makeUnreadable}: `load` fails with `corrupt` and this reason. */
  unreadable: string | null;
}

/** The status a row shows: the saved one, except `pending` while a retry request waits (never for `corrupt`). */
function shownStatus(row: IndexRow): WorkflowStatus {
  if (row.saved === 'corrupt') return 'corrupt';
  const requested = row.retryRequestedAt;
  if (requested === null) return row.saved;
  const waiting = row.retryAppliedAt === null || compareTimes(requested, row.retryAppliedAt) > 0;
  const overtaken = row.cancelRequestedAt !== null && compareTimes(row.cancelRequestedAt, requested) > 0;
  return waiting && !overtaken ? 'pending' : row.saved;
}

function zeroCounts(): Record<TaskStatus, number> {
  return Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
}

/** Calls made on a {@link MemoryWorkflowStore}, for tests and simulations. */
export interface MemoryWorkflowStoreCalls {
  creates: number;
  loads: number;
  saves: number;
  conflicts: number;
  taskRowsWritten: number;
  /** Workflows purged (outcome `purged`). */
  purges: number;
}

/**
 * The blobs a workflow keeps in the state container besides its runtime (upstream overflow blobs):
 * in memory the {@link MemoryOutputStore} holds them, and {@link MemoryOutputStore.deleteStateBlobs}
 * is this.
 */
export interface MemoryStateBlobs {
  /** Deletes every state-container blob of the workflow (`upstream/{wf}/`); returns how many. */
  deleteStateBlobs(workflowId: string): number;
}

/** Options of {@link MemoryWorkflowStore}. */
export interface MemoryWorkflowStoreOptions {
  /**
   * Where the workflows' overflow blobs are (the output store that wrote them), so that
   * {@link MemoryWorkflowStore.purge} deletes them with the runtime, as the Azure store deletes
   * `upstream/{wf}/` of its container. Without it they are left where they are.
   */
  stateBlobs?: MemoryStateBlobs;
}

class MemoryLease implements CoordinatorLease {
  readonly leaseId: string;
  private readonly controller = new AbortController();
  released = false;

  constructor(
    leaseId: string,
    private readonly onRelease: (lease: MemoryLease) => void,
  ) {
    this.leaseId = leaseId;
  }

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  lose(reason: JobqError): void {
    if (!this.released && !this.controller.signal.aborted) this.controller.abort(reason);
  }

  release(): Promise<void> {
    if (!this.released) {
      this.released = true;
      this.onRelease(this);
    }
    return Promise.resolve();
  }
}

/**
 * {@link WorkflowStore} in memory, with the semantics of the Azure store: ETag compare-and-swap on
 * the runtime, an index row per workflow (counts, queues, request timestamps, `pending` while a retry
 * waits, `corrupt` for good) and task rows derived from each save, request rows with their own ETag,
 * the purge of finished workflows, the coordinator lease (held by one, broken on request, lost), and
 * the stats document. It passes the same contract suite.
 *
 * Built for big workflows: the runtime object is kept as it was saved (runtimes are immutable; no
 * copy, no encoding) and `load` returns that object; a save writes the task rows of
 * `changedTasks(previous, runtime)` only, each row holding the task's state object; the index is
 * grouped by shown and by saved status (O(1) per save), so a listing reads only the groups its
 * filter names: a scan of the active workflows never walks the finished ones.
 *
 * Test hooks: {@link dropIndexRow} (a submit that crashed before its index row),
 * {@link makeUnreadable} (a runtime that no longer decodes), {@link rowFault} (row writes that fail),
 * {@link loseLease} (a renewal that failed), {@link calls}.
 */
export class MemoryWorkflowStore implements WorkflowStore {
  /** What was called, counted. */
  readonly calls: MemoryWorkflowStoreCalls = { creates: 0, loads: 0, saves: 0, conflicts: 0, taskRowsWritten: 0, purges: 0 };
  /**
   * When set and returning an error for a save, that save stores the runtime but writes no index or
   * task row and reports the error as `rowsError` (the rows are written with the next save that
   * writes task rows), as the Azure store does when its table writes fail after the blob was
   * written; and a `writeTaskRows` of that runtime writes nothing and reports every row `failed`.
   */
  rowFault: ((runtime: WorkflowRuntime) => JobqError | null) | null = null;

  private readonly runtimes = new Map<string, StoredRuntime>();
  private readonly index = new Map<string, IndexRow>();
  /** The ids of the index rows: all of them, by shown status, by saved status (the groups listings read). */
  private readonly allRows = new SortedIds();
  private readonly byShown = new Map<WorkflowStatus, SortedIds>(WORKFLOW_STATUSES.map((s) => [s, new SortedIds()]));
  private readonly bySaved = new Map<WorkflowStatus, SortedIds>(WORKFLOW_STATUSES.map((s) => [s, new SortedIds()]));
  /** Request rows by workflow id (the request list the coordinator scans), and their ids in key order. */
  private readonly requests = new Map<string, RequestRow>();
  private readonly requestIds = new SortedIds();
  /** Re-run records by {@link rerunKey}, and their keys in order. */
  private readonly reruns = new Map<string, RerunRecord>();
  private readonly rerunKeys = new SortedIds();
  private readonly stateBlobs: MemoryStateBlobs | null;
  private readonly taskRows = new Map<string, WorkflowRows>();
  /** Workflows whose last save could not write its rows (see {@link rowFault}). */
  private readonly unwritten = new Set<string>();
  private nextEtag = 1;
  private nextLease = 1;
  private holder: MemoryLease | null = null;
  /** The stats documents by shard (0: `_coordinator.stats.json`). */
  private readonly stats = new Map<number, string>();
  /** How the last holder's lease ended: released (`available`) or lost (`expired`, as an unrenewed blob lease). */
  private leaseEnded: 'available' | 'expired' = 'available';

  constructor(options: MemoryWorkflowStoreOptions = {}) {
    this.stateBlobs = options.stateBlobs ?? null;
  }

  // ---- runtime ---------------------------------------------------------------------------------

  create(runtime: WorkflowRuntime, definitionHash: string, options?: OperationOptions): Promise<CreateResult> {
    return run(() => {
      const id = runtime.workflowId;
      checkWorkflowId(id);
      if (typeof definitionHash !== 'string' || definitionHash === '')
        throw new JobqError('invalid-argument', 'a definition hash is required');
      checkAborted(options, `create workflow "${id}"`);
      this.calls.creates++;
      const existing = this.runtimes.get(id);
      const row = this.index.get(id);
      if (existing !== undefined && row !== undefined && row.definitionHash !== '') {
        if (row.definitionHash !== definitionHash) {
          throw new JobqError('conflict', `workflow "${id}" already exists with a different definition`, { details: { workflowId: id } });
        }
        return { etag: existing.etag, created: false };
      }
      // New, or a runtime without a (completed) index row — a submit that crashed: overwrite it.
      const etag = this.newEtag();
      this.runtimes.set(id, { runtime, etag, unreadable: null });
      this.taskRows.delete(id);
      this.unwritten.delete(id);
      this.putTaskRows(runtime, changedTasks(undefined, runtime));
      this.mergeIndexRow(runtime, definitionHash);
      return { etag, created: true };
    });
  }

  load(workflowId: string, options?: OperationOptions): Promise<LoadedRuntime | null> {
    return run(() => {
      checkWorkflowId(workflowId);
      checkAborted(options, `load workflow "${workflowId}"`);
      this.calls.loads++;
      const stored = this.runtimes.get(workflowId);
      if (stored === undefined) return null;
      if (stored.unreadable !== null) {
        throw new JobqError('corrupt', `the runtime of workflow "${workflowId}" cannot be read: ${stored.unreadable}`, {
          details: { workflowId },
        });
      }
      return { runtime: stored.runtime, etag: stored.etag };
    });
  }

  loadIfChanged(workflowId: string, etag: string, options?: OperationOptions): Promise<LoadedRuntime | 'unchanged' | null> {
    const stored = this.runtimes.get(workflowId);
    if (stored !== undefined && stored.unreadable === null && stored.etag === etag) {
      return run(() => {
        checkAborted(options, `load workflow "${workflowId}"`);
        this.calls.loads++;
        return 'unchanged' as const;
      });
    }
    return this.load(workflowId, options);
  }

  save(runtime: WorkflowRuntime, etag: string, options?: SaveOptions): Promise<SaveResult> {
    return run(() => {
      const id = runtime.workflowId;
      checkWorkflowId(id);
      const previous = options?.previous;
      if (previous && previous.workflowId !== id)
        throw new JobqError('invalid-argument', `save workflow "${id}": "previous" is the runtime of another workflow`);
      checkAborted(options, `save workflow "${id}"`);
      const stored = this.runtimes.get(id);
      if (stored === undefined || stored.etag !== etag) {
        this.calls.conflicts++;
        throw new JobqError(
          'conflict',
          `workflow "${id}" changed since it was loaded (ETag mismatch), or no longer exists: nothing was written; load it and apply the events again`,
          {
            details: { workflowId: id },
          },
        );
      }
      this.calls.saves++;
      const next = { runtime, etag: this.newEtag(), unreadable: null };
      this.runtimes.set(id, next);
      // The runtime only: the caller writes the rows (writeTaskRows, writeIndexRow).
      if (options?.deferTaskRows && options.deferIndexRow) return { etag: next.etag, rowsError: null };
      const fault = this.rowFault?.(runtime) ?? null;
      if (fault !== null) {
        this.unwritten.add(id);
        return {
          etag: next.etag,
          rowsError: new JobqError(
            fault.code,
            `workflow "${id}" was saved, but some of its index/task rows were not written (they are written again with its next save): ${fault.message}`,
            {
              retryable: fault.retryable,
              details: { workflowId: id },
            },
          ),
        };
      }
      if (options?.deferTaskRows) {
        // The caller writes this save's task rows (writeTaskRows); rows a failed save left wait for
        // the next save that writes rows.
        this.mergeIndexRow(runtime, undefined);
        return { etag: next.etag, rowsError: null };
      }
      // After a save whose rows failed every row is written again: the failed save's changes are unknown here.
      const names = this.unwritten.delete(id) ? changedTasks(undefined, runtime) : changedTasks(previous, runtime);
      const also = options?.alsoTaskRows ?? [];
      this.putTaskRows(runtime, also.length === 0 ? names : [...new Set([...names, ...also])]);
      this.mergeIndexRow(runtime, undefined);
      return { etag: next.etag, rowsError: null };
    });
  }

  /** Writes the rows of `names` from `runtime`; with {@link rowFault} set and failing, none (all `failed`). */
  writeTaskRows(runtime: WorkflowRuntime, names: readonly string[], options?: OperationOptions): Promise<TaskRowsResult> {
    return run(() => {
      checkWorkflowId(runtime.workflowId);
      checkAborted(options, `write task rows of workflow "${runtime.workflowId}"`);
      if (names.length === 0) return { failed: [], error: null };
      const fault = this.rowFault?.(runtime) ?? null;
      if (fault !== null) return { failed: [...names], error: fault };
      this.putTaskRows(runtime, names);
      return { failed: [], error: null };
    });
  }

  /** Merges the index row of `runtime` (a save's deferred index row); with {@link rowFault} set and failing, throws it. */
  writeIndexRow(runtime: WorkflowRuntime, options?: OperationOptions): Promise<void> {
    return run(() => {
      checkWorkflowId(runtime.workflowId);
      checkAborted(options, `write the index row of workflow "${runtime.workflowId}"`);
      const fault = this.rowFault?.(runtime) ?? null;
      if (fault !== null) throw fault;
      this.mergeIndexRow(runtime, undefined);
    });
  }

  // ---- index -----------------------------------------------------------------------------------

  getWorkflow(workflowId: string, options?: OperationOptions): Promise<WorkflowSummary | null> {
    return run(() => {
      checkWorkflowId(workflowId);
      checkAborted(options, `read the index row of workflow "${workflowId}"`);
      const row = this.index.get(workflowId);
      return row === undefined ? null : summaryOf(row);
    });
  }

  /**
   * Workflows from the index: in key (id) order, paged after the last id returned, or newest first
   * (`recent`), paged by offset. Every filter is served from the status groups of the index: only
   * the rows of the group(s) the filter names are looked at (the asked saved statuses, the asked
   * shown statuses — `pending` included —, the final statuses for `finishedBefore`; whichever is
   * smallest), each once per listing in key order, the time conditions checked on each.
   */
  listWorkflows(filter: WorkflowFilter = {}): Promise<Page<WorkflowSummary>> {
    return run(() => {
      const limit = pageLimit(filter.limit, DEFAULT_WORKFLOW_PAGE);
      const updatedBefore = filterTime(filter.updatedBefore, 'updatedBefore');
      const finishedBefore = filterTime(filter.finishedBefore, 'finishedBefore');
      checkAborted(filter, 'list workflows');
      const recent = filter.recent === true;
      const offsetCursor = recent ? decodeCursor(filter.continuationToken, 'offset') : undefined;
      const afterCursor = recent ? undefined : decodeCursor(filter.continuationToken, 'after', 1);
      const shown = filter.status === undefined ? null : new Set(filter.status);
      const saved = filter.savedStatus === undefined ? null : new Set(filter.savedStatus);
      if (shown?.size === 0 || saved?.size === 0) return { items: [], continuationToken: null };
      const inShard = shardTest(filter.shard);
      const wanted = (row: IndexRow): boolean =>
        inShard(row.workflowId) &&
        (shown === null || shown.has(row.shown)) &&
        (saved === null || saved.has(row.saved)) &&
        (updatedBefore === undefined || compareTimes(row.updatedAt, updatedBefore) < 0) &&
        (finishedBefore === undefined ||
          (isTerminalWorkflowStatus(row.saved) && compareTimes(row.finishedAt ?? row.updatedAt, finishedBefore) < 0));
      const groups = this.groupsFor(shown, saved, finishedBefore !== undefined);
      if (recent) {
        const rows: IndexRow[] = [];
        for (const group of groups)
          for (const id of group.values()) {
            const row = this.index.get(id)!;
            if (wanted(row)) rows.push(row);
          }
        rows.sort(byRecent);
        const offset = offsetCursor?.offset ?? 0;
        const end = offset + limit;
        return {
          items: rows.slice(offset, end).map(summaryOf),
          continuationToken: end < rows.length ? encodeCursor({ kind: 'offset', offset: end }) : null,
        };
      }
      const items: WorkflowSummary[] = [];
      for (const id of inKeyOrder(groups, afterCursor?.key[0])) {
        const row = this.index.get(id)!;
        if (!wanted(row)) continue;
        // One more match after a full page: there is a next page.
        if (items.length === limit)
          return { items, continuationToken: encodeCursor({ kind: 'after', key: [items[limit - 1]!.workflowId] }) };
        items.push(summaryOf(row));
      }
      return { items, continuationToken: null };
    });
  }

  countWorkflows(options?: OperationOptions): Promise<Record<WorkflowStatus, number>> {
    return run(() => {
      checkAborted(options, 'count workflows');
      return Object.fromEntries(WORKFLOW_STATUSES.map((s) => [s, this.byShown.get(s)?.size ?? 0])) as Record<WorkflowStatus, number>;
    });
  }

  requestCancel(workflowId: string, at: string, options?: OperationOptions): Promise<void> {
    return this.requestAt(workflowId, 'cancel', at, options);
  }

  requestRetry(workflowId: string, at: string, options?: OperationOptions): Promise<void> {
    return this.requestAt(workflowId, 'retry', at, options);
  }

  /** The request rows in key (id) order, paged after the last id returned: only the outstanding requests are looked at. */
  listRequests(filter: RequestFilter = {}): Promise<Page<WorkflowRequest>> {
    return run(() => {
      const limit = pageLimit(filter.limit, DEFAULT_REQUEST_PAGE);
      const cursor = decodeCursor(filter.continuationToken, 'after', 1);
      checkAborted(filter, 'list workflow requests');
      const inShard = shardTest(filter.shard);
      const items: WorkflowRequest[] = [];
      for (const workflowId of this.requestIds.after(cursor?.key[0])) {
        if (!inShard(workflowId)) continue;
        if (items.length === limit)
          return { items, continuationToken: encodeCursor({ kind: 'after', key: [items[limit - 1]!.workflowId] }) };
        const request = this.requests.get(workflowId)!;
        items.push({
          workflowId,
          cancelRequestedAt: request.cancelRequestedAt,
          retryRequestedAt: request.retryRequestedAt,
          etag: request.etag,
        });
      }
      return { items, continuationToken: null };
    });
  }

  /** Removes the request row if it is still at `etag` (`*`: whatever it holds, as an If-Match). */
  clearRequest(workflowId: string, etag: string, options?: OperationOptions): Promise<boolean> {
    return run(() => {
      checkWorkflowId(workflowId);
      if (typeof etag !== 'string' || etag === '')
        throw new JobqError('invalid-argument', 'clearing a request needs the ETag it was listed with');
      checkAborted(options, `clear the request of workflow "${workflowId}"`);
      const request = this.requests.get(workflowId);
      if (request === undefined || (etag !== '*' && request.etag !== etag)) return false;
      this.deleteRequest(workflowId);
      return true;
    });
  }

  /** Records a re-run request as its own record (see `WorkflowStore.requestRerun`). */
  requestRerun(request: NewRerunRequest, options?: OperationOptions): Promise<void> {
    return run(() => {
      const { workflowId, requestId, taskName, downstream, requestedAt } = request;
      checkWorkflowId(workflowId);
      if (!isValidRerunRequestId(requestId))
        throw new JobqError(
          'invalid-argument',
          'a re-run request id is 1–64 letters, digits, "_" and "-", starting with a letter or digit',
        );
      if (typeof taskName !== 'string' || taskName === '') throw new JobqError('invalid-argument', 'a re-run request needs a task name');
      if (typeof downstream !== 'boolean') throw new JobqError('invalid-argument', 'downstream must be true or false');
      checkTimestamp(requestedAt, 'the re-run request time');
      checkAborted(options, `request a re-run in workflow "${workflowId}"`);
      if (!this.index.has(workflowId))
        throw new JobqError('not-found', `request a re-run in workflow "${workflowId}" failed: the workflow does not exist`, {
          details: { workflowId },
        });
      const key = rerunKey(workflowId, requestId);
      if (this.reruns.has(key))
        throw new JobqError('conflict', `re-run request ${requestId} of workflow "${workflowId}" is recorded already`, {
          details: { workflowId },
        });
      this.reruns.set(key, { request: { workflowId, requestId, taskName, downstream, requestedAt }, etag: this.newEtag() });
      this.rerunKeys.add(key);
    });
  }

  /** The re-run records in key order (of one workflow: its keys only), paged after the last key returned. */
  listReruns(filter: RerunFilter = {}): Promise<Page<RerunRequest>> {
    return run(() => {
      const limit = pageLimit(filter.limit, DEFAULT_REQUEST_PAGE);
      const cursor = decodeCursor(filter.continuationToken, 'after', 1);
      if (filter.workflowId !== undefined) checkWorkflowId(filter.workflowId);
      checkAborted(filter, 'list re-run requests');
      const inShard = shardTest(filter.shard);
      const prefix = filter.workflowId === undefined ? '' : `${filter.workflowId}~`;
      const items: RerunRequest[] = [];
      for (const key of this.rerunKeys.after(cursor?.key[0] ?? (prefix === '' ? undefined : prefix))) {
        if (!key.startsWith(prefix)) break;
        if (!inShard(this.reruns.get(key)!.request.workflowId)) continue;
        if (items.length === limit) {
          const last = items[limit - 1]!;
          return { items, continuationToken: encodeCursor({ kind: 'after', key: [rerunKey(last.workflowId, last.requestId)] }) };
        }
        const record = this.reruns.get(key)!;
        items.push({ ...record.request, etag: record.etag });
      }
      return { items, continuationToken: null };
    });
  }

  /** Removes a re-run record if it is still at `etag` (`*`: whatever it holds). */
  clearRerun(workflowId: string, requestId: string, etag: string, options?: OperationOptions): Promise<boolean> {
    return run(() => {
      checkWorkflowId(workflowId);
      if (!isValidRerunRequestId(requestId))
        throw new JobqError(
          'invalid-argument',
          'a re-run request id is 1–64 letters, digits, "_" and "-", starting with a letter or digit',
        );
      if (typeof etag !== 'string' || etag === '')
        throw new JobqError('invalid-argument', 'clearing a re-run request needs the ETag it was listed with');
      checkAborted(options, `clear re-run request ${requestId} of workflow "${workflowId}"`);
      const key = rerunKey(workflowId, requestId);
      const record = this.reruns.get(key);
      if (record === undefined || (etag !== '*' && record.etag !== etag)) return false;
      this.reruns.delete(key);
      this.rerunKeys.delete(key);
      return true;
    });
  }

  markCorrupt(workflowId: string, reason: string, at: string, options?: OperationOptions): Promise<void> {
    return run(() => {
      checkWorkflowId(workflowId);
      checkTimestamp(at, 'the time');
      checkAborted(options, `mark workflow "${workflowId}" corrupt`);
      const row = this.index.get(workflowId) ?? this.emptyRow(workflowId);
      this.setSaved(row, 'corrupt');
      row.error = shortenError(`corrupt: ${reason}`);
      row.updatedAt = at;
      row.finishedAt = at;
      this.reshow(row);
    });
  }

  // ---- purge -----------------------------------------------------------------------------------

  /**
   * Purges a finished workflow (see `WorkflowStore.purge`), as the Azure store does: the re-check
   * on the runtime (finished or set aside as corrupt, no retry or re-run waiting, finished before
   * the cutoff), then the runtime (only at the ETag checked) and the workflow's state blobs (see
   * {@link MemoryWorkflowStoreOptions.stateBlobs}), `beforeIndexRow`, the task rows, the request
   * row and the re-run records, and the index row last. Everything up to `beforeIndexRow` happens at once (no other call runs
   * in between); a failing `beforeIndexRow` leaves the rest for a second purge.
   */
  async purge(workflowId: string, options: PurgeOptions = {}): Promise<PurgeResult> {
    checkWorkflowId(workflowId);
    const finishedBefore = filterTime(options.finishedBefore, 'finishedBefore');
    checkAborted(options, `purge workflow "${workflowId}"`);
    const row = this.index.get(workflowId);
    if (row === undefined) return { workflowId, outcome: 'not-found', status: null, finishedAt: null, reason: null, blobs: 0, taskRows: 0 };
    const verdict = this.recheck(row, finishedBefore);
    const result = (outcome: PurgeResult['outcome'], extra: Partial<PurgeResult> = {}): PurgeResult => ({
      workflowId,
      outcome,
      status: verdict.status,
      finishedAt: verdict.finishedAt,
      reason: null,
      blobs: 0,
      taskRows: 0,
      ...extra,
    });
    if (verdict.reason !== null) return result('skipped', { reason: verdict.reason });
    if (options.dryRun) return result('would-purge', { taskRows: verdict.taskRows });
    let blobs = 0;
    if (verdict.etag !== undefined) {
      const stored = this.runtimes.get(workflowId);
      if (stored !== undefined && verdict.etag !== null && stored.etag !== verdict.etag) {
        return result('skipped', { reason: 'it changed while being purged (a save since it was checked): left as it is' });
      }
      if (stored !== undefined) {
        // From here on no save of the workflow can succeed.
        this.runtimes.delete(workflowId);
        this.unwritten.delete(workflowId);
        blobs = 1;
      }
    }
    blobs += this.stateBlobs?.deleteStateBlobs(workflowId) ?? 0;
    await options.beforeIndexRow?.();
    checkAborted(options, `purge workflow "${workflowId}"`);
    const taskRows = this.taskRows.get(workflowId)?.rows.size ?? 0;
    this.taskRows.delete(workflowId);
    this.deleteRequest(workflowId);
    for (const key of [...this.rerunKeys.after(`${workflowId}~`)]) {
      if (!key.startsWith(`${workflowId}~`)) break;
      this.reruns.delete(key);
      this.rerunKeys.delete(key);
    }
    this.deleteIndexRow(workflowId);
    this.calls.purges++;
    return result('purged', { blobs, taskRows });
  }

  /**
   * Whether a workflow may be purged, decided on its runtime (the truth) and its index row: finished
   * (the runtime's status is final, or the row set it aside as corrupt), no retry or re-run waiting, finished
   * before the cutoff. Without a runtime (an earlier purge stopped half-way) the index row decides.
   */
  private recheck(row: IndexRow, finishedBefore: string | undefined): PurgeVerdict {
    const stored = this.runtimes.get(row.workflowId);
    const setAside = row.shown === 'corrupt';
    const verdict: PurgeVerdict = {
      status: row.shown,
      finishedAt: row.finishedAt,
      updatedAt: row.updatedAt,
      etag: undefined,
      taskRows: Object.values(row.counts).reduce((a, b) => a + b, 0),
      reason: null,
    };
    if (stored !== undefined && stored.unreadable === null) {
      const runtime = stored.runtime;
      verdict.status = setAside ? 'corrupt' : runtime.status;
      verdict.etag = stored.etag;
      verdict.taskRows = taskCount(runtime);
      verdict.updatedAt = runtime.updatedAt;
      if (runtime.finishedAt !== null || !setAside) verdict.finishedAt = runtime.finishedAt;
      const retry = row.retryRequestedAt;
      if (!setAside && !isTerminalWorkflowStatus(runtime.status)) verdict.reason = `it is not finished: its runtime is ${runtime.status}`;
      else if (!setAside && retry !== null && (runtime.retryAppliedAt === null || compareTimes(retry, runtime.retryAppliedAt) > 0)) {
        verdict.reason = `a retry was requested at ${retry} and is not applied yet`;
      } else if (!setAside) {
        const waiting = this.rerunsOf(row.workflowId).find((r) => !(runtime.rerunsApplied ?? []).some((a) => a.id === r.requestId));
        if (waiting !== undefined)
          verdict.reason = `a re-run of task "${waiting.taskName}" was requested at ${waiting.requestedAt} and is not applied yet`;
      }
    } else if (stored !== undefined) {
      verdict.etag = null;
      if (!setAside) {
        verdict.reason = `its runtime cannot be read and the coordinator has not set it aside as corrupt (index status ${row.shown}): the runtime of workflow "${row.workflowId}" cannot be read: ${stored.unreadable}`;
      }
    } else if (!isTerminalWorkflowStatus(row.shown)) {
      verdict.reason = `it has no runtime and its index row says ${row.shown}: not a finished workflow`;
    }
    if (verdict.reason === null && finishedBefore !== undefined) {
      const finished = verdict.finishedAt ?? verdict.updatedAt;
      if (!(compareTimes(finished, finishedBefore) < 0)) verdict.reason = `it finished at ${finished}, not before ${finishedBefore}`;
    }
    return verdict;
  }

  // ---- task rows -------------------------------------------------------------------------------

  /**
   * Task rows in key order (workflow id, then task name), paged after the last row returned. With
   * `workflowId` only that workflow's rows are looked at (a name prefix is a range of them).
   */
  listTasks(filter: TaskFilter = {}): Promise<Page<TaskRow>> {
    return run(() => {
      const limit = pageLimit(filter.limit, DEFAULT_TASK_PAGE);
      if (filter.workflowId !== undefined) checkWorkflowId(filter.workflowId);
      const prefix = filter.namePrefix ?? '';
      if (prefix !== '' && filter.workflowId === undefined)
        throw new JobqError('invalid-argument', 'listing tasks by name prefix needs a workflow id');
      const cursor = decodeCursor(filter.continuationToken, 'after', 2);
      checkAborted(filter, 'list tasks');
      if (filter.status && filter.status.length === 0) return { items: [], continuationToken: null };
      const statuses = filter.status ? new Set<TaskStatus>(filter.status) : null;
      const workflows = filter.workflowId !== undefined ? [filter.workflowId] : [...this.taskRows.keys()].sort();
      const items: TaskRow[] = [];
      let w = cursor === undefined ? 0 : firstAfter(workflows, cursor.key[0] ?? '', (id) => id, true);
      for (; w < workflows.length; w++) {
        const workflowId = workflows[w]!;
        const entry = this.taskRows.get(workflowId);
        if (entry === undefined) continue;
        const names = (entry.sorted ??= [...entry.rows.keys()].sort());
        let i = prefix === '' ? 0 : firstAfter(names, prefix, (n) => n, true);
        if (cursor !== undefined && workflowId === cursor.key[0])
          i = Math.max(
            i,
            firstAfter(names, cursor.key[1] ?? '', (n) => n),
          );
        for (; i < names.length; i++) {
          const name = names[i]!;
          if (prefix !== '' && !name.startsWith(prefix)) break;
          const ref = entry.rows.get(name)!;
          if (statuses !== null && !statuses.has(ref.state.status)) continue;
          const queue = entry.queueOf.get(name) ?? '';
          if (filter.queue !== undefined && queue !== filter.queue) continue;
          items.push(taskRowOf(workflowId, name, queue, ref));
          if (items.length >= limit) return { items, continuationToken: encodeCursor({ kind: 'after', key: [workflowId, name] }) };
        }
      }
      return { items, continuationToken: null };
    });
  }

  // ---- coordinator -----------------------------------------------------------------------------

  acquireLease(options: AcquireLeaseOptions = {}): Promise<CoordinatorLease> {
    return run(() => {
      checkAborted(options, 'acquire the coordinator lease');
      if (this.holder !== null) {
        if (!options.breakExisting) {
          throw new JobqError(
            'lease-held',
            'the coordinator lease of this prefix is held by another coordinator: stop it, or break the lease (--break-lease)',
          );
        }
        this.loseLease('the coordinator lease was broken by another coordinator');
      }
      return this.tryAcquireLease()!;
    });
  }

  /**
   * {@link acquireLease} without waiting and without breaking: the lease, or null while another
   * holds it. A {@link MemoryOwnershipDeployment} built over this store claims shard 0 with it.
   */
  tryAcquireLease(): CoordinatorLease | null {
    if (this.holder !== null) return null;
    const lease = new MemoryLease(`memory-lease-${this.nextLease++}`, (released) => {
      if (this.holder !== released) return;
      this.holder = null;
      this.leaseEnded = 'available';
    });
    this.holder = lease;
    return lease;
  }

  /** Whether someone holds the coordinator lease now. */
  get leaseHeld(): boolean {
    return this.holder !== null;
  }

  /**
   * Takes the lease from its holder, whose `lost` signal fires with a `lease-lost` error (as when
   * its renewal failed or someone broke it). Harmless when nobody holds it. With `only`, only when
   * that lease is the one held.
   */
  loseLease(why = 'the coordinator lease could not be renewed', only?: CoordinatorLease): void {
    const holder = this.holder;
    if (only !== undefined && holder !== only) return;
    this.holder = null;
    if (holder !== null) this.leaseEnded = 'expired';
    holder?.lose(new JobqError('lease-lost', `the coordinator lease was lost (${why}); stop writing`));
  }

  leaseState(options?: OperationOptions): Promise<CoordinatorLeaseState | null> {
    return run(() => {
      checkAborted(options, 'read the coordinator lease');
      if (this.holder !== null) return { held: true, state: 'leased' as const };
      return this.nextLease === 1 ? null : { held: false, state: this.leaseEnded };
    });
  }

  writeCoordinatorStats(stats: CoordinatorStats, options?: CoordinatorStatsOptions): Promise<void> {
    return run(() => {
      if (typeof stats !== 'object' || stats === null || Array.isArray(stats))
        throw new JobqError('invalid-argument', 'coordinator stats must be a JSON object');
      checkAborted(options, 'write the coordinator stats');
      this.stats.set(options?.shard ?? 0, JSON.stringify(stats));
    });
  }

  readCoordinatorStats(options?: CoordinatorStatsOptions): Promise<CoordinatorStats | null> {
    return run(() => {
      checkAborted(options, 'read the coordinator stats');
      const stats = this.stats.get(options?.shard ?? 0);
      return stats === undefined ? null : (JSON.parse(stats) as CoordinatorStats);
    });
  }

  // ---- test hooks ------------------------------------------------------------------------------

  /** Removes a workflow's index row, keeping its runtime and task rows: a submit that crashed before its index row. */
  dropIndexRow(workflowId: string): void {
    this.deleteIndexRow(workflowId);
  }

  /** Makes `load` of a workflow fail with `corrupt` (a runtime that no longer decodes) until its next save or create. */
  makeUnreadable(workflowId: string, reason: string): void {
    const stored = this.runtimes.get(workflowId);
    if (stored === undefined) throw new JobqError('not-found', `workflow "${workflowId}" has no runtime`);
    this.runtimes.set(workflowId, { ...stored, etag: this.newEtag(), unreadable: reason });
  }

  /** The ids of every stored runtime (for tests). */
  workflowIds(): string[] {
    return [...this.runtimes.keys()];
  }

  // ---- internals -------------------------------------------------------------------------------

  private newEtag(): string {
    return `"m${(this.nextEtag++).toString(36)}"`;
  }

  /**
   * The smallest choice of index groups that holds every row a filter can match: the saved-status
   * groups asked (only the final ones with `finishedBefore`), the shown-status groups asked, the
   * final saved-status groups (`finishedBefore`), or every row.
   */
  private groupsFor(
    shown: ReadonlySet<WorkflowStatus> | null,
    saved: ReadonlySet<WorkflowStatus> | null,
    finishedOnly: boolean,
  ): SortedIds[] {
    const choices: SortedIds[][] = [];
    const savedGroups = (statuses: Iterable<WorkflowStatus>) =>
      [...statuses].filter((s) => !finishedOnly || isTerminalWorkflowStatus(s)).map((s) => this.bySaved.get(s)!);
    if (saved !== null) choices.push(savedGroups(saved));
    if (shown !== null) choices.push([...shown].map((s) => this.byShown.get(s)!));
    if (finishedOnly) choices.push(savedGroups(FINAL_STATUSES));
    if (choices.length === 0) return [this.allRows];
    const size = (groups: SortedIds[]) => groups.reduce((n, g) => n + g.size, 0);
    return choices.reduce((best, next) => (size(next) < size(best) ? next : best));
  }

  private putTaskRows(runtime: WorkflowRuntime, names: readonly string[]): void {
    const id = runtime.workflowId;
    let entry = this.taskRows.get(id);
    const facts = factsOf(runtime.definition);
    if (entry === undefined) {
      entry = { rows: new Map(), queueOf: facts.queueOf, sorted: null };
      this.taskRows.set(id, entry);
    }
    entry.queueOf = facts.queueOf;
    const updatedAt = runtime.updatedAt;
    for (const name of names) {
      const state = taskState(runtime, name);
      if (state === undefined) continue;
      const ref = entry.rows.get(name);
      if (ref === undefined) {
        entry.rows.set(name, { state, updatedAt });
        entry.sorted = null;
      } else {
        ref.state = state;
        ref.updatedAt = updatedAt;
      }
    }
    this.calls.taskRowsWritten += names.length;
  }

  private emptyRow(workflowId: string): IndexRow {
    const row: IndexRow = {
      workflowId,
      name: '',
      saved: 'pending',
      shown: 'pending',
      counts: zeroCounts(),
      queues: [],
      definitionHash: '',
      createdAt: '',
      updatedAt: '',
      finishedAt: null,
      cancelRequestedAt: null,
      retryRequestedAt: null,
      cancelAppliedAt: null,
      retryAppliedAt: null,
      error: null,
    };
    this.index.set(workflowId, row);
    this.allRows.add(workflowId);
    this.byShown.get(row.shown)!.add(workflowId);
    this.bySaved.get(row.saved)!.add(workflowId);
    return row;
  }

  private deleteIndexRow(workflowId: string): void {
    const row = this.index.get(workflowId);
    if (row === undefined) return;
    this.byShown.get(row.shown)!.delete(workflowId);
    this.bySaved.get(row.saved)!.delete(workflowId);
    this.allRows.delete(workflowId);
    this.index.delete(workflowId);
  }

  /** The re-run requests of a workflow, in key order. */
  private rerunsOf(workflowId: string): NewRerunRequest[] {
    const prefix = `${workflowId}~`;
    const found: NewRerunRequest[] = [];
    for (const key of this.rerunKeys.after(prefix)) {
      if (!key.startsWith(prefix)) break;
      found.push(this.reruns.get(key)!.request);
    }
    return found;
  }

  private deleteRequest(workflowId: string): void {
    this.requests.delete(workflowId);
    this.requestIds.delete(workflowId);
  }

  private setSaved(row: IndexRow, saved: WorkflowStatus): void {
    if (row.saved === saved) return;
    this.bySaved.get(row.saved)!.delete(row.workflowId);
    this.bySaved.get(saved)!.add(row.workflowId);
    row.saved = saved;
  }

  /** What create and save write (a merge: request timestamps and, on save, the definition hash stay). */
  private mergeIndexRow(runtime: WorkflowRuntime, definitionHash: string | undefined): void {
    const row = this.index.get(runtime.workflowId) ?? this.emptyRow(runtime.workflowId);
    row.name = runtime.definition.name;
    this.setSaved(row, runtime.status);
    row.counts = { ...runtime.counts };
    row.queues = factsOf(runtime.definition).queues;
    row.createdAt = runtime.createdAt;
    row.updatedAt = runtime.updatedAt;
    row.finishedAt = runtime.finishedAt;
    row.cancelAppliedAt = runtime.cancelAppliedAt;
    row.retryAppliedAt = runtime.retryAppliedAt;
    row.error = workflowError(runtime);
    if (definitionHash !== undefined) row.definitionHash = definitionHash;
    this.reshow(row);
  }

  private reshow(row: IndexRow): void {
    const shown = shownStatus(row);
    if (shown === row.shown) return;
    this.byShown.get(row.shown)!.delete(row.workflowId);
    this.byShown.get(shown)!.add(row.workflowId);
    row.shown = shown;
  }

  private requestAt(workflowId: string, what: 'cancel' | 'retry', at: string, options: OperationOptions | undefined): Promise<void> {
    return run(() => {
      checkWorkflowId(workflowId);
      checkTimestamp(at, `the ${what} request time`);
      checkAborted(options, `request ${what} of workflow "${workflowId}"`);
      const row = this.index.get(workflowId);
      if (row === undefined)
        throw new JobqError('not-found', `request ${what} of workflow "${workflowId}" failed: the workflow does not exist`, {
          details: { workflowId },
        });
      if (what === 'cancel') row.cancelRequestedAt = at;
      else row.retryRequestedAt = at;
      this.reshow(row);
      // Then the request row the coordinator's scan lists (a merge: the other kind's time stays), at a new version.
      const request = this.requests.get(workflowId) ?? { cancelRequestedAt: null, retryRequestedAt: null, etag: '' };
      if (what === 'cancel') request.cancelRequestedAt = at;
      else request.retryRequestedAt = at;
      request.etag = this.newEtag();
      this.requests.set(workflowId, request);
      this.requestIds.add(workflowId);
    });
  }
}

/** Runs `fn` so that a throw becomes a rejected promise, as callers of an async API expect. */
/** Whether a workflow id is in the filter's shard (every id without one); `invalid-argument` for a shard filter that names no shard. */
function shardTest(shard: ShardFilter | undefined): (workflowId: string) => boolean {
  if (shard === undefined) return () => true;
  checkShardFilter(shard);
  return (workflowId) => shardOf(workflowId, shard.count) === shard.index;
}

function run<T>(fn: () => T): Promise<T> {
  return new Promise((resolve) => resolve(fn()));
}

function summaryOf(row: IndexRow): WorkflowSummary {
  return {
    workflowId: row.workflowId,
    name: row.name,
    status: row.shown,
    counts: { ...row.counts },
    queues: [...row.queues],
    definitionHash: row.definitionHash,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    cancelRequestedAt: row.cancelRequestedAt,
    retryRequestedAt: row.retryRequestedAt,
    cancelAppliedAt: row.cancelAppliedAt,
    retryAppliedAt: row.retryAppliedAt,
    finishedAt: row.finishedAt,
    error: row.error,
  };
}

/** The ids of disjoint groups in key order after `after`, merged lazily. */
function* inKeyOrder(groups: readonly SortedIds[], after: string | undefined): Generator<string, void, undefined> {
  const heads = groups.map((g) => g.after(after)).map((it) => ({ it, next: it.next() }));
  for (;;) {
    let min: (typeof heads)[number] | undefined;
    for (const head of heads) if (!head.next.done && (min === undefined || head.next.value < (min.next.value as string))) min = head;
    if (min === undefined) return;
    const id = min.next.value as string;
    min.next = min.it.next();
    yield id;
  }
}

function taskRowOf(workflowId: string, taskName: string, queue: string, ref: TaskRowRef): TaskRow {
  return {
    workflowId,
    taskName,
    status: ref.state.status,
    queue,
    attemptNo: ref.state.attemptNo,
    updatedAt: ref.updatedAt,
    error: shortenError(ref.state.error),
  };
}
