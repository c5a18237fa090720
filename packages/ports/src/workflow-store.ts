import type { TaskStatus, WorkflowRuntime, WorkflowStatus } from '@jobq/dag-core';
import type { JobqError } from './errors';
import type { ShardCount } from './ownership';
import type { OperationOptions } from './task-queue';

/**
 * @experimental The storage side of workflows (docs/design.md#storage-layout): the runtime blob is the source of truth,
 * written with ETag compare-and-swap; the index row and the task rows are derived from it for
 * listing and querying. Adapters pass `describeWorkflowStoreContract` from `@jobq/ports/testing`.
 */

/** A runtime with the ETag it was read at. */
export interface LoadedRuntime {
  runtime: WorkflowRuntime;
  /** Opaque (an adapter may encode more than one ETag in it): only ever passed back to `save`. */
  etag: string;
}

/** The outcome of {@link WorkflowStore.create}. */
export interface CreateResult {
  /** The ETag of the runtime blob (the current one when the workflow already existed). */
  etag: string;
  /**
   * False when the id already held the same definition (a resubmission): nothing was written, and
   * the stored runtime may have moved on since.
   */
  created: boolean;
}

/** Options of {@link WorkflowStore.save}. */
export interface SaveOptions extends OperationOptions {
  /**
   * The runtime this one was reduced from (the one last saved). Only the tasks that changed since
   * (`changedTasks(previous, runtime)` of `@jobq/dag-core`) get their task row written; without it
   * every task row is written.
   */
  previous?: WorkflowRuntime;
  /**
   * Write the runtime and the index row only: the caller writes this save's task rows later with
   * {@link WorkflowStore.writeTaskRows} (the coordinator gathers them over several saves; see
   * docs/failure-model.md). Default false.
   */
  deferTaskRows?: boolean;
  /**
   * More tasks whose rows this save writes (from this runtime) with its own: rows that earlier
   * saves deferred. Ignored with {@link deferTaskRows}.
   */
  alsoTaskRows?: readonly string[];
  /**
   * With {@link deferTaskRows}: write the runtime only; the caller writes the index row later with
   * {@link WorkflowStore.writeIndexRow} (the coordinator, off the critical path of its saves).
   * Default false.
   */
  deferIndexRow?: boolean;
}

/** The outcome of {@link WorkflowStore.save}. */
export interface SaveResult {
  /** The new ETag of the runtime blob: the save succeeded. */
  etag: string;
  /**
   * Set when the runtime was saved but some derived rows (the index row or task rows) could not
   * be written. The runtime blob is the truth, so this is not a failure of the save: the store
   * writes the missing rows again with the next save of the workflow. Callers log it.
   */
  rowsError: JobqError | null;
}

/** The outcome of {@link WorkflowStore.writeTaskRows}. */
export interface TaskRowsResult {
  /** The tasks whose rows were not written (write them again later). */
  failed: string[];
  /** The first error (null when every row was written). */
  error: JobqError | null;
}

/** One row of the workflow index. */
export interface WorkflowSummary {
  workflowId: string;
  name: string;
  /**
   * The status of the last save, except `pending` while a retry request is not yet applied
   * (`retryRequestedAt` newer than `retryAppliedAt`, and not overtaken by a newer cancel request).
   */
  status: WorkflowStatus;
  counts: Record<TaskStatus, number>;
  /** Queue specs used by the workflow's tasks, sorted. */
  queues: string[];
  definitionHash: string;
  createdAt: string;
  updatedAt: string;
  /** Written only by {@link WorkflowStore.requestCancel}. */
  cancelRequestedAt: string | null;
  /** Written only by {@link WorkflowStore.requestRetry}. */
  retryRequestedAt: string | null;
  /** The last cancel request the runtime applied (from the last save). */
  cancelAppliedAt: string | null;
  /** The last retry request the runtime applied (from the last save). */
  retryAppliedAt: string | null;
  /** When the workflow last reached a final status (from the last save, or when it was set aside as corrupt); null while it is not finished. */
  finishedAt: string | null;
  /** For a failed workflow, the first failed task and its error; for a corrupt one, the reason (possibly shortened). */
  error: string | null;
}

/** One row of the task table. */
export interface TaskRow {
  workflowId: string;
  taskName: string;
  status: TaskStatus;
  /** The task's queue spec. */
  queue: string;
  attemptNo: number;
  /** `updatedAt` of the runtime save that last changed this task. */
  updatedAt: string;
  /** The task's last error (possibly shortened). */
  error: string | null;
}

/** A page of results and the token for the next one (null at the end). */
export interface Page<T> {
  items: T[];
  /** Opaque; pass it back with the same filter for the next page. */
  continuationToken: string | null;
}

/**
 * One shard's part of a listing (docs/sharding.md): the workflows whose `shardOf(id, count)`
 * (`@jobq/dag-core`) is `index`, that is the index partitions p with p mod count = index.
 */
export interface ShardFilter {
  readonly index: number;
  readonly count: ShardCount;
}

/**
 * Which workflows to list. Every condition but `status` with `pending` in it and `recent` is a
 * query the store answers page by page (on Azure a server-side filter paged by the service's
 * continuation tokens), so a listing costs about one request per page of matches; `recent` and a
 * `status` list holding `pending` read every row the other conditions leave and sort or filter them
 * in memory (for people, not for loops).
 */
export interface WorkflowFilter extends OperationOptions {
  /**
   * Only these index statuses: the status of the last save, except `pending` while a retry request
   * waits (see {@link WorkflowSummary.status}). With `pending` in it the listing reads everything.
   */
  status?: readonly WorkflowStatus[];
  /**
   * Only workflows whose last save wrote one of these statuses, whatever requests wait (a failed
   * workflow with a retry waiting is `failed` here; it is listed with its index status, `pending`).
   * `pending` here means "never activated". A paged query, never a full read.
   */
  savedStatus?: readonly WorkflowStatus[];
  /** Only workflows whose `updatedAt` (last save) is earlier than this ISO-8601 time. A paged query. */
  updatedBefore?: string;
  /**
   * Only workflows whose last save wrote a final status (completed, failed, cancelled, corrupt) and
   * that finished before this ISO-8601 time (by `finishedAt`; by `updatedAt` when that is unknown).
   * A paged query.
   */
  finishedBefore?: string;
  /** Newest `updatedAt` first (else in the store's key order). */
  recent?: boolean;
  /** Only this shard's workflows: on Azure, queries of the shard's own index partitions only. */
  shard?: ShardFilter;
  /** Page size (at most this many items). */
  limit?: number;
  continuationToken?: string;
}

/** Which task rows to list. */
export interface TaskFilter extends OperationOptions {
  workflowId?: string;
  /** Task names starting with this (a RowKey range); needs `workflowId`. */
  namePrefix?: string;
  status?: readonly TaskStatus[];
  /** Only tasks routed to this queue spec. */
  queue?: string;
  /** Page size (at most this many items). */
  limit?: number;
  continuationToken?: string;
}

/**
 * A workflow with a cancel or retry request the coordinator has not yet taken care of: written by
 * {@link WorkflowStore.requestCancel} / {@link WorkflowStore.requestRetry} beside the index row, and
 * kept until the coordinator {@link WorkflowStore.clearRequest | clears} it. The coordinator lists
 * them on every scan, so a request whose wake-up was lost is still applied, on a finished workflow too.
 */
export interface WorkflowRequest {
  workflowId: string;
  /** The newest cancel request recorded here (null: none). */
  cancelRequestedAt: string | null;
  /** The newest retry request recorded here (null: none). */
  retryRequestedAt: string | null;
  /** Opaque version: {@link WorkflowStore.clearRequest} removes the request only while it is unchanged. */
  etag: string;
}

/**
 * A request to re-run one task of a workflow — and, with `downstream`, every task that depends on
 * it — written by {@link WorkflowStore.requestRerun} as a record of its own (docs/failure-model.md,
 * "Re-running a task"). Two requests are two records: neither overwrites the other, whatever their
 * times. A record is kept until the coordinator has applied it (the runtime remembers the ids it
 * applied, so a record listed again is not applied twice) and {@link WorkflowStore.clearRerun |
 * cleared} it.
 */
export interface RerunRequest {
  workflowId: string;
  /** Unique per request: see {@link isValidRerunRequestId}. */
  requestId: string;
  taskName: string;
  downstream: boolean;
  /** When the request was made (ISO-8601). */
  requestedAt: string;
  /** Opaque version: {@link WorkflowStore.clearRerun} removes the record only while it is unchanged. */
  etag: string;
}

/** A re-run request to record: a {@link RerunRequest} without its version. */
export type NewRerunRequest = Omit<RerunRequest, 'etag'>;

/** Which re-run requests to list. */
export interface RerunFilter extends OperationOptions {
  /** Only this workflow's (a range of keys: one query however many others wait). */
  workflowId?: string;
  /** Only the requests of this shard's workflows. */
  shard?: ShardFilter;
  /** Page size (at most this many items). */
  limit?: number;
  continuationToken?: string;
}

/**
 * A re-run request id: 1–64 letters, digits, `_` and `-`, starting with a letter or digit (it is
 * part of a Table Storage row key, after the workflow id). Clients make one per request, with a
 * random part.
 */
export const RERUN_REQUEST_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** True for a string {@link RERUN_REQUEST_ID_PATTERN} accepts. */
export function isValidRerunRequestId(id: unknown): id is string {
  return typeof id === 'string' && RERUN_REQUEST_ID_PATTERN.test(id);
}

/** Which requests to list. */
export interface RequestFilter extends OperationOptions {
  /** Only the requests of this shard's workflows. */
  shard?: ShardFilter;
  /** Page size (at most this many items). */
  limit?: number;
  continuationToken?: string;
}

/** Options of {@link WorkflowStore.purge}. */
export interface PurgeOptions extends OperationOptions {
  /** Check everything and say what would happen, deleting nothing. */
  dryRun?: boolean;
  /**
   * Purge only a workflow that finished before this ISO-8601 time (its runtime's `finishedAt`, else
   * its `updatedAt`); a workflow finished (again) since is `skipped`.
   */
  finishedBefore?: string;
  /**
   * Deletes what the workflow keeps outside this store (its outputs: see
   * {@link OutputStore.deleteWorkflowOutputs}). Called once the runtime is gone and before the index
   * row is deleted; when it throws, the purge stops there with that error and the index row stays,
   * so the workflow is still listed and a later purge finishes it.
   */
  beforeIndexRow?: () => Promise<void>;
}

/** What {@link WorkflowStore.purge} did. */
export interface PurgeResult {
  workflowId: string;
  /**
   * - `purged`: everything of the workflow was deleted (also when an earlier purge had begun);
   * - `would-purge`: `dryRun`, and a purge would delete it;
   * - `skipped`: not deleted, because it is not finished, a retry or re-run waits, or it finished after
   *   `finishedBefore`, or it changed while being purged (see {@link reason});
   * - `not-found`: no index row.
   */
  outcome: 'purged' | 'would-purge' | 'skipped' | 'not-found';
  /** The status the decision was made on (the runtime's, or `corrupt` from the index row); null when not found. */
  status: WorkflowStatus | null;
  finishedAt: string | null;
  /** Why it was skipped (null otherwise). */
  reason: string | null;
  /** Blobs deleted in this store (not counting `beforeIndexRow`'s); 0 for a dry run. */
  blobs: number;
  /** Task rows deleted; for a dry run, the number of tasks. */
  taskRows: number;
}

/** The coordinator's exclusive right to write a prefix's runtimes (docs/design.md#the-coordinator). */
export interface CoordinatorLease {
  readonly leaseId: string;
  /**
   * Fires (with a `lease-lost` {@link JobqError} as its reason) when the lease cannot be renewed or
   * was broken by someone else: stop writing at once. Not fired by {@link release}.
   */
  readonly lost: AbortSignal;
  /** Stops renewing and gives the lease up; harmless when already lost or released. */
  release(): Promise<void>;
}

/**
 * The coordinator lease as a reader sees it ({@link WorkflowStore.leaseState}), for `doctor`: held
 * (`leased`) or not, in the words of a blob lease (`available`, `expired`, `breaking`, `broken`).
 */
export interface CoordinatorLeaseState {
  /** True while a coordinator holds the lease (`state` is `leased`). */
  held: boolean;
  state: 'leased' | 'available' | 'expired' | 'breaking' | 'broken';
}

/** Options of {@link WorkflowStore.acquireLease}. */
export interface AcquireLeaseOptions extends OperationOptions {
  /** Break a lease held by someone else first (`--break-lease`). */
  breakExisting?: boolean;
}

/** The coordinator's counters as JSON (docs/design.md#the-coordinator: written every 10 s, read by `doctor`). */
export type CoordinatorStats = Record<string, unknown>;

/** Options of {@link WorkflowStore.writeCoordinatorStats} and {@link WorkflowStore.readCoordinatorStats}. */
export interface CoordinatorStatsOptions extends OperationOptions {
  /**
   * The stats document of this shard's runner (docs/sharding.md#names): shard 0 (or none) is
   * `_coordinator.stats.json`, shard k ≥ 1 `_shards/{k}.stats.json`.
   */
  shard?: number;
}

/** Runtime blobs with ETag compare-and-swap, plus the index and task rows derived from them. */
export interface WorkflowStore {
  /**
   * Submits a new runtime: the blob (If-None-Match), then every task row, then the index row. An
   * id whose blob exists without an index row (a submit that crashed) is overwritten; an id
   * holding the same definition hash is a success with `created: false` and nothing written; a
   * different hash is a `conflict`. When the rows fail with an error that is not retryable (the
   * service refuses them), what the create wrote is removed before it throws: no runtime, no rows.
   */
  create(runtime: WorkflowRuntime, definitionHash: string, options?: OperationOptions): Promise<CreateResult>;
  /**
   * The runtime and its ETag; null when the workflow does not exist; `corrupt` when it cannot be
   * decoded; `unsupported` when a newer version stored it (it is left as it is).
   */
  load(workflowId: string, options?: OperationOptions): Promise<LoadedRuntime | null>;
  /**
   * Like {@link load}, for a reader that holds the runtime read at `etag` (a token of `load` or
   * `save`): `'unchanged'` when no save happened since, without reading the runtime (on Azure, a
   * look at the head and log properties instead of their bytes); otherwise what `load` returns.
   * Optional: without it, readers `load` and compare the ETag.
   */
  loadIfChanged?(workflowId: string, etag: string, options?: OperationOptions): Promise<LoadedRuntime | 'unchanged' | null>;
  /**
   * Writes the runtime if it is still at `etag` (`conflict`, nothing written, otherwise), then
   * merges the changed task rows (none with `deferTaskRows`; plus `alsoTaskRows`), then the index
   * row: a reader that sees the index row of a save sees the task rows it wrote. When the runtime
   * is finished and some of its task rows could not be written, the index row is not written
   * either (`rowsError`): it stays behind its runtime, which the coordinator's sweeps notice and
   * repair by saving the runtime again, so a finished workflow's index row never comes before its
   * final task rows. Never touches the request timestamps.
   */
  save(runtime: WorkflowRuntime, etag: string, options?: SaveOptions): Promise<SaveResult>;
  /**
   * Merges the rows of `names` (tasks of `runtime`; unknown names are skipped) into the task table,
   * from `runtime`: the task rows a save deferred (`deferTaskRows`). The rows that could not be
   * written come back in `failed`; it throws only when nothing could be tried (a bad argument).
   * Writes of one workflow's rows must not overlap: the caller waits for one to end before it
   * starts the next, so an older state never lands after a newer one.
   */
  writeTaskRows(runtime: WorkflowRuntime, names: readonly string[], options?: OperationOptions): Promise<TaskRowsResult>;
  /**
   * Merges the index row of `runtime` (its status, counts and times; never the request
   * timestamps): the index row a save deferred (`deferIndexRow`). As with task rows, writes of one
   * workflow's index row must not overlap, so an older state never lands after a newer one.
   */
  writeIndexRow(runtime: WorkflowRuntime, options?: OperationOptions): Promise<void>;
  getWorkflow(workflowId: string, options?: OperationOptions): Promise<WorkflowSummary | null>;
  listWorkflows(filter?: WorkflowFilter): Promise<Page<WorkflowSummary>>;
  /** Number of workflows in each (index) status. */
  countWorkflows(options?: OperationOptions): Promise<Record<WorkflowStatus, number>>;
  listTasks(filter?: TaskFilter): Promise<Page<TaskRow>>;
  /**
   * Records a cancel request's timestamp on the index row, touching nothing else, then in the
   * workflow's {@link WorkflowRequest} (the request list the coordinator scans); `not-found`, and
   * nothing written, without an index row.
   */
  requestCancel(workflowId: string, at: string, options?: OperationOptions): Promise<void>;
  /** Like {@link requestCancel}, for a retry request. */
  requestRetry(workflowId: string, at: string, options?: OperationOptions): Promise<void>;
  /**
   * Records a request to re-run a task as a record of its own (never merged with another request);
   * `not-found`, and nothing written, without an index row; `conflict` when a request with this id
   * is recorded already; `invalid-argument` for an id that {@link isValidRerunRequestId} refuses, an
   * empty task name or a time that is not ISO-8601. Touches neither the index row nor the request
   * row of {@link requestCancel}.
   */
  requestRerun(request: NewRerunRequest, options?: OperationOptions): Promise<void>;
  /**
   * The re-run requests not yet cleared (of one workflow with `workflowId`), in pages, by workflow
   * id and then request id (a query of the re-run records alone: its cost follows their number).
   */
  listReruns(filter?: RerunFilter): Promise<Page<RerunRequest>>;
  /**
   * Removes a re-run request once the coordinator has applied it, only if it is still at `etag`
   * (`*`: whatever it holds). True when removed; false when it changed or is gone.
   */
  clearRerun(workflowId: string, requestId: string, etag: string, options?: OperationOptions): Promise<boolean>;
  /**
   * The workflows with a request not yet cleared, in pages (a query of the requests alone: its cost
   * follows the number of outstanding requests, not of workflows).
   */
  listRequests(filter?: RequestFilter): Promise<Page<WorkflowRequest>>;
  /**
   * Removes a workflow's request once the coordinator has applied it, only if it is still at `etag`
   * (a request recorded since keeps it). True when removed; false when it changed or is gone.
   */
  clearRequest(workflowId: string, etag: string, options?: OperationOptions): Promise<boolean>;
  /**
   * Deletes a finished workflow: everything this store keeps of it (runtime, task rows, request,
   * re-run requests, index row). It first re-checks, from the runtime (the truth), that the workflow
   * is finished — completed, failed, cancelled or corrupt (the runtime's status, or an index row set
   * aside as corrupt) — with no retry request waiting and no re-run request its runtime has not
   * applied, and (with `finishedBefore`) that it finished before
   * that time; otherwise it is `skipped` and nothing is deleted. The runtime goes first, and only
   * if it is still the one checked (a save since makes it `skipped`): after that no save can bring
   * the workflow back. The index row goes last, so a purge that failed half-way is listed again
   * and a second purge finishes it (a workflow whose runtime is already gone counts as finished
   * when its index row says so).
   */
  purge(workflowId: string, options?: PurgeOptions): Promise<PurgeResult>;
  /**
   * Sets a workflow aside as `corrupt` on its index row, with the reason (shown as its `error`), for
   * a workflow whose runtime cannot be read: the runtime is left as it is. Creates the row when
   * there is none. Only the coordinator calls it; nothing but purging the workflow undoes it (a
   * pending retry request does not show the row as `pending`).
   */
  markCorrupt(workflowId: string, reason: string, at: string, options?: OperationOptions): Promise<void>;
  /** Takes the coordinator lease and keeps renewing it; `lease-held` while someone else has it. */
  acquireLease(options?: AcquireLeaseOptions): Promise<CoordinatorLease>;
  /**
   * Whether a coordinator holds the lease now, read without taking it; null when no coordinator
   * has ever taken it on this prefix.
   */
  leaseState(options?: OperationOptions): Promise<CoordinatorLeaseState | null>;
  /** Replaces the coordinator's stats document (of `options.shard`: that shard's runner's). */
  writeCoordinatorStats(stats: CoordinatorStats, options?: CoordinatorStatsOptions): Promise<void>;
  /** The last stats document written (of `options.shard`), or null when there is none. */
  readCoordinatorStats(options?: CoordinatorStatsOptions): Promise<CoordinatorStats | null>;
}
