import type { TableClient, TableEntityResult } from '@azure/data-tables';
import type { ContainerClient, RequestPolicyFactory } from '@azure/storage-blob';
import {
  isTerminalWorkflowStatus,
  isValidWorkflowId,
  type WorkflowRuntime,
  type WorkflowStatus,
  WORKFLOW_STATUSES,
  changedTasks,
  taskState,
} from '@jobq/dag-core';
import {
  JobqError,
  isJobqError,
  resolveSettings,
  shardStatsBlob,
  type AcquireLeaseOptions,
  type CoordinatorLease,
  type CoordinatorLeaseState,
  type CoordinatorStats,
  type CoordinatorStatsOptions,
  type CreateResult,
  type LoadedRuntime,
  type SaveOptions,
  type SaveResult,
  type OperationOptions,
  type Page,
  type PurgeOptions,
  type PurgeResult,
  type NewRerunRequest,
  type RequestFilter,
  type RerunFilter,
  type RerunRequest,
  type TaskFilter,
  type TaskRow,
  type TaskRowsResult,
  type WorkflowFilter,
  type WorkflowRequest,
  type WorkflowStore,
  type WorkflowSummary,
} from '@jobq/ports';
import { accountClients, type StorageAccountConnection } from './clients';
import { storeCall } from './errors';
import {
  CANCEL_REQUESTED,
  RETRY_REQUESTED,
  allOf,
  byRecent,
  corruptEntity,
  finishedBeforeFilter,
  indexEntity,
  indexStatus,
  statusFilter,
  summaryOf,
  updatedBeforeFilter,
} from './index-table';
import { PROCESS_DEFINITION_CACHE, type DefinitionCache } from './definition-cache';
import { acquireCoordinatorLease, checkLeaseSettings, readCoordinatorLeaseState } from './lease';
import { purgeWorkflow } from './purge';
import { deleteRequestRow, listRequestRows, writeRequestRow } from './request-rows';
import { allRerunRows, checkRequestId, deleteRerunRow, insertRerunRow, listRerunRows } from './rerun-rows';
import { storeNames, indexPartition, type StoreNames } from './names';
import { partitionedTablePage, partitionedTableScan, shardPartitions } from './shard-paging';
import { MAX_APPEND_BLOCK_BYTES, RuntimeBlobs, type InitialBlobs } from './runtime-blobs';
import { readStats, writeStats } from './stats';
import { deleteAllTaskRows, deleteForeignTaskRows, taskQueryFilter, taskRowOf, writeTaskRows } from './task-table';
import { decodeCursor, offsetPage, pageLimit, tablePage, tableScan } from './workflow-paging';

/** A data-tables pipeline policy (e.g. a transaction counter), added after the retry policy. */
export type TablePipelinePolicy = Parameters<TableClient['pipeline']['addPolicy']>[0];

/** Options of {@link openWorkflowStore}. */
export interface OpenWorkflowStoreOptions {
  connection: StorageAccountConnection;
  /** The deployment prefix (docs/design.md#names): `PREFIX` of `ACCOUNT/PREFIX`. */
  prefix: string;
  /** Limit of each storage call. Default 30 000. */
  operationTimeoutInMs?: number;
  /** Create the workflows container and both tables when missing. Default true; read-only tools pass false. */
  createIfMissing?: boolean;
  /** Coordinator lease duration: whole seconds, 15 000–60 000. Default 60 000 (docs/design.md#the-coordinator). */
  leaseDurationInMs?: number;
  /** Time between lease renewals, below the duration. Default 15 000 (docs/design.md#the-coordinator). */
  renewIntervalInMs?: number;
  /** Task-row transactions in flight at once during a save. Default 8. */
  rowWriteConcurrency?: number;
  /** Extra blob pipeline policies (below the retry policy: every HTTP try is seen). */
  blobPolicies?: readonly RequestPolicyFactory[];
  /** Extra table pipeline policies (after the retry policy: every HTTP try is seen). */
  tablePolicies?: readonly TablePipelinePolicy[];
  /** A save rolls to a new snapshot once the log would pass max(this, the snapshot's size). Default 1 MiB. */
  logRollMinBytes?: number;
  /** A save rolls once the log holds this many records. Default 49 000 (the service allows 50 000 blocks). */
  logRollMaxAppends?: number;
  /** A save whose log record is larger rolls instead. Default (and at most) 4 MiB, Append Block's limit. */
  logMaxAppendBytes?: number;
  /** Definitions by hash, decoded once: the process-wide cache unless given (tests give their own). */
  definitionCache?: DefinitionCache;
}

/** Settings of an {@link AzureWorkflowStore}, defaults applied. */
export interface WorkflowStoreSettings {
  operationTimeoutInMs: number;
  leaseDurationInMs: number;
  renewIntervalInMs: number;
  rowWriteConcurrency: number;
  logRollMinBytes: number;
  logRollMaxAppends: number;
  logMaxAppendBytes: number;
}

export const WORKFLOW_STORE_DEFAULTS: WorkflowStoreSettings = {
  operationTimeoutInMs: 30_000,
  leaseDurationInMs: 60_000,
  renewIntervalInMs: 15_000,
  rowWriteConcurrency: 8,
  logRollMinBytes: 1024 * 1024,
  logRollMaxAppends: 49_000,
  logMaxAppendBytes: MAX_APPEND_BLOCK_BYTES,
};

/** Default page sizes. */
const DEFAULT_WORKFLOW_PAGE = 100;
const DEFAULT_TASK_PAGE = 1_000;

function checkWorkflowId(workflowId: string): void {
  if (!isValidWorkflowId(workflowId)) {
    throw new JobqError('invalid-argument', 'a workflow id is 1–128 letters, digits, ".", "_" and "-", starting with a letter or digit');
  }
}

function checkTimestamp(at: string, what: string): void {
  if (typeof at !== 'string' || !Number.isFinite(Date.parse(at)))
    throw new JobqError('invalid-argument', `${what} must be an ISO-8601 timestamp`);
}

/**
 * {@link WorkflowStore} on Azure Storage (docs/runtime-format.md).
 *
 * - The runtime is the truth: a head `{p}-workflows/{id}.json` naming the definition
 *   (`definitions/{id}/{sha256}.json`, written once), a snapshot and an append-blob log
 *   (`state/{id}/…`). A save appends the changed task records and workflow fields to the log with
 *   one conditional Append Block; now and then it rolls to a new snapshot (see
 *   {@link RuntimeBlobs}). The `etag` callers hold is an opaque token of the log's position.
 *   Runtimes of the previous format (the whole runtime in `{id}.json`) are read, and migrated by
 *   their next save.
 * - The index row and task rows are derived. `create` writes them after the runtime (its head last
 *   of its blobs, If-None-Match), task rows first and the index row last, so an index row means a
 *   completed submit; a failure there fails the create. After a retryable failure resubmitting the
 *   id repairs it (an orphan runtime is overwritten); after any other failure the create deletes
 *   what it wrote before throwing. After a successful `save`, a row failure does not fail the save
 *   (the runtime is stored): it comes back as `rowsError`, and the task rows that were not written
 *   are remembered and written with the next save of that workflow through this store that writes
 *   task rows (the index row is rewritten by every save anyway). A save writes its task rows first
 *   and its index row last (a finished runtime's index row not at all when task rows failed).
 *   `save` resolves only after its rows are written, so saves that follow each other (as one
 *   coordinator's do) never leave an older index row behind. With `deferTaskRows` a save writes no
 *   task row: the coordinator writes them later with `writeTaskRows`; with `deferIndexRow` too, a
 *   save writes the runtime only, and the coordinator writes the index row with `writeIndexRow`.
 * - `cancel_requested_at` / `retry_requested_at` are written only by `requestCancel` /
 *   `requestRetry`, each a Merge of that one property; saves never send them. Each request is
 *   also recorded in a request row (PartitionKey `requests`, see request-rows.ts) that the
 *   coordinator lists every scan and clears once applied.
 * - Re-run requests are rows of their own (PartitionKey `reruns`, see rerun-rows.ts), inserted by
 *   `requestRerun` and never merged, listed by the coordinator's scan and cleared once applied.
 * - `purge` deletes a finished workflow, runtime first (If-Match) and index row last.
 */
export class AzureWorkflowStore implements WorkflowStore {
  readonly names: StoreNames;
  readonly settings: WorkflowStoreSettings;
  private readonly container: ContainerClient;
  private readonly index: TableClient;
  private readonly tasks: TableClient;
  /** Workflow id → task rows a save could not write, written again with its next save. */
  private readonly unwrittenTaskRows = new Map<string, Set<string>>();
  private readonly blobs: RuntimeBlobs;

  constructor(
    container: ContainerClient,
    index: TableClient,
    tasks: TableClient,
    names: StoreNames,
    settings: WorkflowStoreSettings,
    definitionCache: DefinitionCache = PROCESS_DEFINITION_CACHE,
  ) {
    checkLeaseSettings({
      durationInMs: settings.leaseDurationInMs,
      renewIntervalInMs: settings.renewIntervalInMs,
      operationTimeoutInMs: settings.operationTimeoutInMs,
    });
    if (!Number.isSafeInteger(settings.rowWriteConcurrency) || settings.rowWriteConcurrency < 1) {
      throw new JobqError('invalid-config', `rowWriteConcurrency must be a whole number ≥ 1, got ${settings.rowWriteConcurrency}`);
    }
    if (!(settings.operationTimeoutInMs > 0))
      throw new JobqError('invalid-config', `operationTimeoutInMs must be positive, got ${settings.operationTimeoutInMs}`);
    if (!Number.isSafeInteger(settings.logRollMinBytes) || settings.logRollMinBytes < 0) {
      throw new JobqError('invalid-config', `logRollMinBytes must be a whole number ≥ 0, got ${settings.logRollMinBytes}`);
    }
    if (!Number.isSafeInteger(settings.logRollMaxAppends) || settings.logRollMaxAppends < 1 || settings.logRollMaxAppends > 49_999) {
      throw new JobqError('invalid-config', `logRollMaxAppends must be a whole number from 1 to 49 999, got ${settings.logRollMaxAppends}`);
    }
    if (
      !Number.isSafeInteger(settings.logMaxAppendBytes) ||
      settings.logMaxAppendBytes < 1 ||
      settings.logMaxAppendBytes > MAX_APPEND_BLOCK_BYTES
    ) {
      throw new JobqError(
        'invalid-config',
        `logMaxAppendBytes must be a whole number from 1 to ${MAX_APPEND_BLOCK_BYTES}, got ${settings.logMaxAppendBytes}`,
      );
    }
    this.container = container;
    this.index = index;
    this.tasks = tasks;
    this.names = names;
    this.settings = settings;
    this.blobs = new RuntimeBlobs(container, settings, definitionCache);
  }

  private get timeout(): number {
    return this.settings.operationTimeoutInMs;
  }

  /** Creates the workflows container and both tables when missing. */
  async ensureExists(options?: OperationOptions): Promise<void> {
    await Promise.all([
      storeCall({ operation: `create container "${this.names.workflowsContainer}"` }, this.timeout, options, (abortSignal) =>
        this.container.createIfNotExists({ abortSignal }),
      ),
      storeCall({ operation: `create table "${this.names.indexTable}"` }, this.timeout, options, (abortSignal) =>
        this.index.createTable({ abortSignal }),
      ),
      storeCall({ operation: `create table "${this.names.tasksTable}"` }, this.timeout, options, (abortSignal) =>
        this.tasks.createTable({ abortSignal }),
      ),
    ]);
  }

  /** Deletes the workflows container and both tables of this prefix, with everything in them (tests, teardown). */
  async deleteStorage(options?: OperationOptions): Promise<void> {
    await Promise.all([
      storeCall({ operation: `delete container "${this.names.workflowsContainer}"` }, this.timeout, options, (abortSignal) =>
        this.container.deleteIfExists({ abortSignal }),
      ),
      storeCall({ operation: `delete table "${this.names.indexTable}"` }, this.timeout, options, (abortSignal) =>
        this.index.deleteTable({ abortSignal }),
      ),
      storeCall({ operation: `delete table "${this.names.tasksTable}"` }, this.timeout, options, (abortSignal) =>
        this.tasks.deleteTable({ abortSignal }),
      ),
    ]);
  }

  // ---- runtime ---------------------------------------------------------------------------------

  async create(runtime: WorkflowRuntime, definitionHash: string, options?: OperationOptions): Promise<CreateResult> {
    const id = runtime.workflowId;
    checkWorkflowId(id);
    if (typeof definitionHash !== 'string' || definitionHash === '')
      throw new JobqError('invalid-argument', 'a definition hash is required');
    // Everything but the head first, under names of this attempt's own; the head (If-None-Match)
    // makes them the workflow's.
    const initial = await this.blobs.writeInitial(runtime, options);
    // Each round either writes the head or learns something that changed under it; 3 rounds cover
    // a concurrent submit of the same id.
    for (let round = 0; round < 3; round++) {
      let headEtag = await this.blobs.putHead(initial.head, { ifNoneMatch: '*' }, options);
      if (headEtag === null) {
        const row = await this.indexRow(id, options);
        const storedHash = typeof row?.definition_hash === 'string' ? row.definition_hash : '';
        if (storedHash !== '') {
          await this.blobs.discard(initial, false, options);
          if (storedHash !== definitionHash)
            throw new JobqError('conflict', `workflow "${id}" already exists with a different definition`, { details: { workflowId: id } });
          const current = await this.blobs.load(id, options);
          if (current !== null) return { etag: current.token, created: false };
          throw new JobqError('conflict', `workflow "${id}" was deleted while it was being submitted again`, {
            details: { workflowId: id },
          });
        }
        // A head without a (completed) index row: a submit that crashed. Overwrite it.
        const orphan = await this.blobs.headEtag(id, options);
        if (orphan === null) continue;
        headEtag = await this.blobs.putHead(initial.head, { ifMatch: orphan }, options);
        if (headEtag === null) continue;
        await this.blobs.removeAllBut(initial.head, options);
        await deleteForeignTaskRows(this.tasks, runtime, this.rowSettings(), options);
      }
      await this.writeSubmitRows(runtime, definitionHash, initial, headEtag, options);
      return { etag: this.blobs.initialToken(initial, headEtag), created: true };
    }
    await this.blobs.discard(initial, false, options);
    throw new JobqError('conflict', `workflow "${id}" is being submitted by someone else at the same time`, {
      details: { workflowId: id },
    });
  }

  /**
   * Every task row, then the index row (its presence marks a completed submit). A retryable failure
   * leaves the runtime for a resubmit of the same id to complete. Any other failure (a row the
   * service refuses, e.g. 400 PropertyValueTooLarge) would fail again the same way: the task rows
   * and the runtime blobs this create wrote are deleted before it throws, so nothing is left and a
   * corrected workflow can take the id.
   */
  private async writeSubmitRows(
    runtime: WorkflowRuntime,
    definitionHash: string,
    initial: InitialBlobs,
    headEtag: string,
    options: OperationOptions | undefined,
  ): Promise<void> {
    const id = runtime.workflowId;
    const rows = await writeTaskRows(this.tasks, runtime, changedTasks(undefined, runtime), this.rowSettings(), options);
    let error = rows.error;
    if (!error) {
      try {
        await this.mergeIndexRow(runtime, definitionHash, options);
        return;
      } catch (indexError) {
        error = isJobqError(indexError) ? indexError : new JobqError('internal', String(indexError));
      }
    }
    const details = { ...error.details, workflowId: id };
    if (error.retryable) {
      throw new JobqError(
        error.code,
        `${error.message}; the runtime of workflow "${id}" was written but its submit did not finish: submit the same id again to complete it`,
        {
          retryable: true,
          details,
        },
      );
    }
    const undone = await this.undoCreate(initial, headEtag, options).then(
      () => null,
      (undoError: unknown) => (isJobqError(undoError) ? undoError : new JobqError('internal', String(undoError))),
    );
    const outcome =
      undone === null
        ? `workflow "${id}" was not submitted and nothing of it was kept`
        : `workflow "${id}" was not submitted, and removing the runtime it had written failed too (${undone.message}); a submit of the same id replaces it`;
    throw new JobqError(error.code, `${error.message}; ${outcome}`, {
      retryable: false,
      details: { ...details, cleanedUp: undone === null },
    });
  }

  /** Deletes the task rows and (if its head is still the one written) the runtime blobs of a create that cannot finish. */
  private async undoCreate(initial: InitialBlobs, headEtag: string, options: OperationOptions | undefined): Promise<void> {
    try {
      await deleteAllTaskRows(this.tasks, initial.head.workflowId, this.rowSettings(), options);
    } catch (error) {
      if (!isJobqError(error, 'not-found')) throw error; // no task table: no rows
    }
    await this.blobs.deleteCreated(initial, headEtag, options);
  }

  async load(workflowId: string, options?: OperationOptions): Promise<LoadedRuntime | null> {
    checkWorkflowId(workflowId);
    const loaded = await this.blobs.load(workflowId, options);
    return loaded === null ? null : { runtime: loaded.runtime, etag: loaded.token };
  }

  async loadIfChanged(workflowId: string, etag: string, options?: OperationOptions): Promise<LoadedRuntime | 'unchanged' | null> {
    checkWorkflowId(workflowId);
    if (await this.blobs.unchangedSince(workflowId, etag, options)) return 'unchanged';
    return this.load(workflowId, options);
  }

  async save(runtime: WorkflowRuntime, etag: string, options?: SaveOptions): Promise<SaveResult> {
    const id = runtime.workflowId;
    checkWorkflowId(id);
    const previous = options?.previous;
    if (previous && previous.workflowId !== id)
      throw new JobqError('invalid-argument', `save workflow "${id}": "previous" is the runtime of another workflow`);
    const changed = changedTasks(previous, runtime);
    const token = await this.blobs.save(runtime, etag, previous, changed, options);
    if (options?.deferTaskRows && options.deferIndexRow) return { etag: token, rowsError: null };
    let rows: string[] = [];
    if (!options?.deferTaskRows) {
      const also = options?.alsoTaskRows ?? [];
      rows = also.length === 0 ? changed : [...new Set([...changed, ...also])];
    }
    return { etag: token, rowsError: await this.writeDerivedRows(runtime, rows, options) };
  }

  async writeTaskRows(runtime: WorkflowRuntime, names: readonly string[], options?: OperationOptions): Promise<TaskRowsResult> {
    checkWorkflowId(runtime.workflowId);
    if (names.length === 0) return { failed: [], error: null };
    const outcome = await writeTaskRows(this.tasks, runtime, names, this.rowSettings(), options);
    return { failed: outcome.failed, error: outcome.error };
  }

  async writeIndexRow(runtime: WorkflowRuntime, options?: OperationOptions): Promise<void> {
    checkWorkflowId(runtime.workflowId);
    await this.mergeIndexRow(runtime, undefined, options);
  }

  /**
   * Deletes every blob of one workflow in the workflows container: its head, its snapshots and
   * logs (`state/{wf}/`), its definition (`definitions/{wf}/`) and its upstream overflow blobs
   * (`upstream/{wf}/`). Rows and outputs are not touched. The names deleted. Internal: the
   * building block of purging a workflow.
   */
  async deleteWorkflowBlobs(workflowId: string, options?: OperationOptions): Promise<string[]> {
    checkWorkflowId(workflowId);
    return this.blobs.deleteWorkflowBlobs(workflowId, options);
  }

  /** The blobs {@link deleteWorkflowBlobs} would delete (for a dry run). Internal. */
  async workflowBlobNames(workflowId: string, options?: OperationOptions): Promise<string[]> {
    checkWorkflowId(workflowId);
    return this.blobs.workflowBlobNames(workflowId, options);
  }

  /**
   * The given task rows (plus those an earlier save could not write), then the index row: a reader
   * that sees the index row sees the rows written before it. When some task rows fail and the
   * runtime is finished, the index row is not written: it stays behind its runtime until the
   * coordinator's sweeps save the runtime again (the final task rows never come after an index
   * row saying the workflow is finished). The first error, or null.
   */
  private async writeDerivedRows(
    runtime: WorkflowRuntime,
    changed: string[],
    options: OperationOptions | undefined,
  ): Promise<JobqError | null> {
    const id = runtime.workflowId;
    let names = changed;
    const unwritten = this.unwrittenTaskRows.get(id);
    if (unwritten && names.length > 0) {
      const set = new Set(changed);
      for (const name of unwritten) if (taskState(runtime, name)) set.add(name);
      names = [...set];
    }
    const rows =
      names.length === 0 ? { failed: [], error: null } : await writeTaskRows(this.tasks, runtime, names, this.rowSettings(), options);
    if (names.length > 0) {
      if (rows.failed.length > 0) this.unwrittenTaskRows.set(id, new Set(rows.failed));
      else this.unwrittenTaskRows.delete(id);
    }
    const holdIndexRow = rows.error !== null && isTerminalWorkflowStatus(runtime.status);
    const indexError = holdIndexRow
      ? null
      : await this.mergeIndexRow(runtime, undefined, options).then(
          () => null,
          (error: unknown) => (isJobqError(error) ? error : new JobqError('internal', String(error))),
        );
    const error = indexError ?? rows.error;
    if (!error) return null;
    const later = holdIndexRow
      ? 'the index row was left as it was, for the coordinator to write them all again'
      : 'they are written again with its next save';
    return new JobqError(
      error.code,
      `workflow "${id}" was saved, but some of its index/task rows were not written (${later}): ${error.message}`,
      {
        retryable: error.retryable,
        details: {
          ...error.details,
          workflowId: id,
          unwrittenTaskRows: rows.failed.length,
          indexRowWritten: !holdIndexRow && indexError === null,
        },
      },
    );
  }

  private rowSettings() {
    return { timeoutInMs: this.timeout, concurrency: this.settings.rowWriteConcurrency };
  }

  private async mergeIndexRow(
    runtime: WorkflowRuntime,
    definitionHash: string | undefined,
    options: OperationOptions | undefined,
  ): Promise<void> {
    const entity = indexEntity(runtime, definitionHash);
    await storeCall({ operation: `write the index row of workflow "${runtime.workflowId}"` }, this.timeout, options, (abortSignal) =>
      this.index.upsertEntity(entity, 'Merge', { abortSignal }),
    );
  }

  // ---- index -----------------------------------------------------------------------------------

  private async indexRow(
    workflowId: string,
    options: OperationOptions | undefined,
  ): Promise<TableEntityResult<Record<string, unknown>> | null> {
    try {
      return await storeCall({ operation: `read the index row of workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
        this.index.getEntity<Record<string, unknown>>(indexPartition(workflowId), workflowId, { abortSignal }),
      );
    } catch (error) {
      if (isJobqError(error, 'not-found')) return null;
      throw error;
    }
  }

  async getWorkflow(workflowId: string, options?: OperationOptions): Promise<WorkflowSummary | null> {
    checkWorkflowId(workflowId);
    const row = await this.indexRow(workflowId, options);
    return row ? summaryOf(row) : null;
  }

  /**
   * Workflows from the index. Every condition but a `status` list holding `pending` is an OData
   * filter the Table service evaluates, and the service pages the result with its continuation
   * tokens: a listing costs about one request per 1 000 matches (`savedStatus`, `updatedBefore`,
   * `finishedBefore` and the other `status` lists). Newest-first order (`recent`) and the `pending`
   * status (a row of any saved status shows `pending` while a retry waits, which no server filter
   * can express) read every row the other conditions leave, sort and filter them in memory, and
   * page by offset: every page costs a scan of those rows (one request per 1 000), and rows that
   * change between pages can shift the offsets.
   */
  async listWorkflows(filter: WorkflowFilter = {}): Promise<Page<WorkflowSummary>> {
    const limit = pageLimit(filter.limit, DEFAULT_WORKFLOW_PAGE);
    const statuses = filter.status;
    if (statuses && statuses.length === 0) return { items: [], continuationToken: null };
    if (filter.savedStatus && filter.savedStatus.length === 0) return { items: [], continuationToken: null };
    const wanted = (s: WorkflowSummary | null): s is WorkflowSummary => s !== null && (!statuses || statuses.includes(s.status));
    const derivedPending = statuses?.includes('pending') ?? false;
    const conditions = [
      statusFilter(filter.savedStatus),
      filter.updatedBefore === undefined ? undefined : updatedBeforeFilter(filter.updatedBefore),
      filter.finishedBefore === undefined ? undefined : finishedBeforeFilter(filter.finishedBefore),
    ];
    const operation = 'list workflows';
    // A shard's listing queries its own index partitions only (docs/sharding.md).
    const partitions = filter.shard === undefined ? null : shardPartitions(filter.shard);
    try {
      if (filter.recent || derivedPending) {
        decodeCursor(filter.continuationToken, 'offset'); // a bad token fails before the scan
        const serverFilter = allOf([...conditions, derivedPending ? undefined : statusFilter(statuses)]);
        const rows =
          partitions === null
            ? await tableScan(this.index, { operation, filter: serverFilter }, this.timeout, filter)
            : await partitionedTableScan(this.index, { operation, filter: serverFilter }, partitions, this.timeout, filter);
        const summaries = rows.map(summaryOf).filter(wanted);
        if (filter.recent) summaries.sort(byRecent);
        return offsetPage(summaries, limit, filter.continuationToken);
      }
      const query = { operation, filter: allOf([...conditions, statusFilter(statuses)]) };
      const map = (row: TableEntityResult<Record<string, unknown>>): WorkflowSummary | null => {
        const summary = summaryOf(row);
        return wanted(summary) ? summary : null;
      };
      if (partitions !== null)
        return await partitionedTablePage(this.index, query, partitions, limit, filter.continuationToken, map, this.timeout, filter);
      return await tablePage(this.index, query, limit, filter.continuationToken, map, this.timeout, filter);
    } catch (error) {
      // No index table (a prefix never used, opened without createIfMissing): no workflows.
      if (isJobqError(error, 'not-found')) return { items: [], continuationToken: null };
      throw error;
    }
  }

  /** Counts by index status: a scan of the index reading four properties per row. */
  async countWorkflows(options?: OperationOptions): Promise<Record<WorkflowStatus, number>> {
    const counts = Object.fromEntries(WORKFLOW_STATUSES.map((s) => [s, 0])) as Record<WorkflowStatus, number>;
    let rows: TableEntityResult<Record<string, unknown>>[];
    try {
      rows = await tableScan(
        this.index,
        { operation: 'count workflows', filter: undefined, select: ['status', RETRY_REQUESTED, 'retry_applied_at', CANCEL_REQUESTED] },
        this.timeout,
        options,
      );
    } catch (error) {
      if (isJobqError(error, 'not-found')) return counts;
      throw error;
    }
    for (const row of rows) {
      const status = indexStatus(row);
      if (status) counts[status]++;
    }
    return counts;
  }

  private async requestAt(
    workflowId: string,
    property: string,
    what: string,
    at: string,
    options: OperationOptions | undefined,
  ): Promise<void> {
    checkWorkflowId(workflowId);
    checkTimestamp(at, `the ${what} request time`);
    // A Merge of this one property, conditional on the row existing (If-Match *): a save's Merge
    // never sends it, and a typo'd id gets `not-found` instead of a stray row.
    await storeCall({ operation: `request ${what} of workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
      this.index.updateEntity({ partitionKey: indexPartition(workflowId), rowKey: workflowId, [property]: at }, 'Merge', { abortSignal }),
    );
    // Then the request row the coordinator's scan lists (after the index row, so a request row
    // always names a workflow; if this write fails the call fails and is repeated).
    await writeRequestRow(this.index, workflowId, property, at, this.timeout, options);
  }

  requestCancel(workflowId: string, at: string, options?: OperationOptions): Promise<void> {
    return this.requestAt(workflowId, CANCEL_REQUESTED, 'cancel', at, options);
  }

  requestRetry(workflowId: string, at: string, options?: OperationOptions): Promise<void> {
    return this.requestAt(workflowId, RETRY_REQUESTED, 'retry', at, options);
  }

  /** The request rows: a query of their one partition (`requests`), paged by the service. */
  listRequests(filter: RequestFilter = {}): Promise<Page<WorkflowRequest>> {
    return listRequestRows(this.index, filter, this.timeout);
  }

  clearRequest(workflowId: string, etag: string, options?: OperationOptions): Promise<boolean> {
    checkWorkflowId(workflowId);
    if (typeof etag !== 'string' || etag === '')
      throw new JobqError('invalid-argument', 'clearing a request needs the ETag it was listed with');
    return deleteRequestRow(this.index, workflowId, etag, this.timeout, options);
  }

  /**
   * Records a re-run request as a row of its own (see rerun-rows.ts): after a read of the index row
   * (`not-found` without one), an insert (`conflict` when the id is recorded already).
   */
  async requestRerun(request: NewRerunRequest, options?: OperationOptions): Promise<void> {
    const { workflowId, requestId, taskName, downstream, requestedAt } = request;
    checkWorkflowId(workflowId);
    checkRequestId(requestId);
    if (typeof taskName !== 'string' || taskName === '') throw new JobqError('invalid-argument', 'a re-run request needs a task name');
    if (typeof downstream !== 'boolean') throw new JobqError('invalid-argument', 'downstream must be true or false');
    checkTimestamp(requestedAt, 'the re-run request time');
    if ((await this.getWorkflow(workflowId, options)) === null) {
      throw new JobqError('not-found', `request a re-run in workflow "${workflowId}" failed: the workflow does not exist`, {
        details: { workflowId },
      });
    }
    await insertRerunRow(this.index, { workflowId, requestId, taskName, downstream, requestedAt }, this.timeout, options);
  }

  /** The re-run rows: a query of their one partition (`reruns`; of one workflow, a range of its keys), paged by the service. */
  async listReruns(filter: RerunFilter = {}): Promise<Page<RerunRequest>> {
    if (filter.workflowId !== undefined) checkWorkflowId(filter.workflowId);
    return await listRerunRows(this.index, filter, this.timeout);
  }

  async clearRerun(workflowId: string, requestId: string, etag: string, options?: OperationOptions): Promise<boolean> {
    checkWorkflowId(workflowId);
    checkRequestId(requestId);
    if (typeof etag !== 'string' || etag === '')
      throw new JobqError('invalid-argument', 'clearing a re-run request needs the ETag it was listed with');
    return await deleteRerunRow(this.index, workflowId, requestId, etag, this.timeout, options);
  }

  async markCorrupt(workflowId: string, reason: string, at: string, options?: OperationOptions): Promise<void> {
    checkWorkflowId(workflowId);
    checkTimestamp(at, 'the time');
    await storeCall({ operation: `mark workflow "${workflowId}" corrupt` }, this.timeout, options, (abortSignal) =>
      this.index.upsertEntity(corruptEntity(workflowId, reason, at), 'Merge', { abortSignal }),
    );
  }

  // ---- purge -----------------------------------------------------------------------------------

  /**
   * Purges a finished workflow (see `WorkflowStore.purge`): after the re-check, the runtime blob
   * (If-Match the ETag checked), {@link deleteWorkflowBlobs}, `beforeIndexRow`, the task rows, the
   * request row and the re-run rows, and the index row last.
   */
  purge(workflowId: string, options?: PurgeOptions): Promise<PurgeResult> {
    return purgeWorkflow(
      {
        readIndexRow: (id, op) => this.getWorkflow(id, op),
        load: (id, op) => this.load(id, op),
        deleteRuntime: (id, etag, op) => this.deleteRuntime(id, etag, op),
        deleteWorkflowBlobs: async (id, op) => (await this.deleteWorkflowBlobs(id, op)).length,
        deleteTaskRows: async (id, op) => {
          try {
            return await deleteAllTaskRows(this.tasks, id, this.rowSettings(), op);
          } catch (error) {
            if (isJobqError(error, 'not-found')) return 0; // no task table: no rows
            throw error;
          }
        },
        deleteRequestRow: async (id, op) => {
          await deleteRequestRow(this.index, id, '*', this.timeout, op);
        },
        listReruns: (id, op) => allRerunRows(this.index, id, this.timeout, op),
        deleteRerunRow: async (id, requestId, op) => {
          await deleteRerunRow(this.index, id, requestId, '*', this.timeout, op);
        },
        deleteIndexRow: async (id, op) => {
          try {
            await storeCall({ operation: `delete the index row of workflow "${id}"` }, this.timeout, op, (abortSignal) =>
              this.index.deleteEntity(indexPartition(id), id, { abortSignal }),
            );
          } catch (error) {
            if (!isJobqError(error, 'not-found')) throw error;
          }
        },
      },
      workflowId,
      options,
    );
  }

  /** Deletes the head if it is still at `etag` (a save token; null: whatever it is now): see `RuntimeBlobs.deleteHead`. */
  private deleteRuntime(
    workflowId: string,
    etag: string | null,
    options: OperationOptions | undefined,
  ): Promise<'deleted' | 'changed' | 'gone'> {
    return this.blobs.deleteHead(workflowId, etag, options);
  }

  // ---- task rows -------------------------------------------------------------------------------

  /**
   * Task rows, paged by the Table service (a workflow's rows in name order). With `workflowId` the
   * query stays in one partition (a name prefix is a RowKey range); without it the service scans
   * the whole task table for the status/queue filter, which suits `doctor`-style queries, not hot
   * paths.
   */
  async listTasks(filter: TaskFilter = {}): Promise<Page<TaskRow>> {
    const limit = pageLimit(filter.limit, DEFAULT_TASK_PAGE);
    if (filter.workflowId !== undefined) checkWorkflowId(filter.workflowId);
    if (filter.status && filter.status.length === 0) return { items: [], continuationToken: null };
    const query = {
      operation: filter.workflowId ? `list the tasks of workflow "${filter.workflowId}"` : 'list tasks',
      filter: taskQueryFilter(filter),
    };
    try {
      return await tablePage(this.tasks, query, limit, filter.continuationToken, taskRowOf, this.timeout, filter);
    } catch (error) {
      if (isJobqError(error, 'not-found')) return { items: [], continuationToken: null };
      throw error;
    }
  }

  // ---- coordinator -----------------------------------------------------------------------------

  acquireLease(options?: AcquireLeaseOptions): Promise<CoordinatorLease> {
    return acquireCoordinatorLease(
      this.container,
      this.names.leaseBlob,
      {
        durationInMs: this.settings.leaseDurationInMs,
        renewIntervalInMs: this.settings.renewIntervalInMs,
        operationTimeoutInMs: this.timeout,
      },
      options,
    );
  }

  leaseState(options?: OperationOptions): Promise<CoordinatorLeaseState | null> {
    return readCoordinatorLeaseState(this.container, this.names.leaseBlob, this.timeout, options);
  }

  writeCoordinatorStats(stats: CoordinatorStats, options?: CoordinatorStatsOptions): Promise<void> {
    return writeStats(this.container, this.statsBlobOf(options?.shard), stats, this.timeout, options);
  }

  readCoordinatorStats(options?: CoordinatorStatsOptions): Promise<CoordinatorStats | null> {
    return readStats(this.container, this.statsBlobOf(options?.shard), this.timeout, options);
  }

  /** Shard 0 (or none) keeps `_coordinator.stats.json`; shard k ≥ 1 has `_shards/{k}.stats.json` (docs/sharding.md#names). */
  private statsBlobOf(shard: number | undefined): string {
    return shard === undefined || shard === 0 ? this.names.statsBlob : shardStatsBlob(shard);
  }
}

/**
 * Opens the workflow store of a prefix, creating its container and tables unless
 * `createIfMissing: false`. `invalid-config` for a bad prefix, connection or setting; `auth` when
 * the credential is refused.
 */
export async function openWorkflowStore(options: OpenWorkflowStoreOptions): Promise<AzureWorkflowStore> {
  const names = storeNames(options.prefix);
  const settings = resolveSettings<WorkflowStoreSettings>(WORKFLOW_STORE_DEFAULTS, options);
  const clients = accountClients(options.connection, {
    operationTimeoutInMs: settings.operationTimeoutInMs,
    ...(options.blobPolicies ? { blobPolicies: options.blobPolicies } : {}),
  });
  const table = (name: string): TableClient => {
    const client = clients.table(name);
    for (const policy of options.tablePolicies ?? []) client.pipeline.addPolicy(policy, { afterPhase: 'Retry' });
    return client;
  };
  const store = new AzureWorkflowStore(
    clients.container(names.workflowsContainer),
    table(names.indexTable),
    table(names.tasksTable),
    names,
    settings,
    options.definitionCache,
  );
  if (options.createIfMissing ?? true) await store.ensureExists();
  return store;
}
