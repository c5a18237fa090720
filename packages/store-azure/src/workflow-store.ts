import type { TableClient, TableEntityResult } from '@azure/data-tables';
import type { ContainerClient, RequestPolicyFactory } from '@azure/storage-blob';
import { RuntimeDecodeError, decodeRuntime, encodeRuntime, isValidWorkflowId, type WorkflowRuntime, type WorkflowStatus, WORKFLOW_STATUSES, changedTasks, taskState } from '@jobq/dag-core';
import {
  JobqError,
  isJobqError,
  type AcquireLeaseOptions,
  type CoordinatorLease,
  type CoordinatorStats,
  type CreateResult,
  type LoadedRuntime,
  type SaveOptions,
  type SaveResult,
  type OperationOptions,
  type Page,
  type PurgeOptions,
  type PurgeResult,
  type RequestFilter,
  type TaskFilter,
  type TaskRow,
  type WorkflowFilter,
  type WorkflowRequest,
  type WorkflowStore,
  type WorkflowSummary,
} from '@jobq/ports';
import { accountClients, type StorageAccountConnection } from './clients';
import { storeCall } from './errors';
import { CANCEL_REQUESTED, RETRY_REQUESTED, allOf, byRecent, corruptEntity, finishedBeforeFilter, indexEntity, indexStatus, statusFilter, summaryOf, updatedBeforeFilter } from './index-table';
import { acquireCoordinatorLease, checkLeaseSettings } from './lease';
import { purgeWorkflow } from './purge';
import { deleteRequestRow, listRequestRows, writeRequestRow } from './request-rows';
import { runtimeBlobName, storeNames, indexPartition, type StoreNames } from './names';
import { readStats, writeStats } from './stats';
import { deleteAllTaskRows, deleteForeignTaskRows, taskQueryFilter, taskRowOf, writeTaskRows } from './task-table';
import { deleteBlobFolders, stateFolders } from './workflow-folders';
import { decodeCursor, offsetPage, pageLimit, tablePage, tableScan } from './workflow-paging';

/** A data-tables pipeline policy (e.g. a transaction counter), added after the retry policy. */
export type TablePipelinePolicy = Parameters<TableClient['pipeline']['addPolicy']>[0];

/** Options of {@link openWorkflowStore}. */
export interface OpenWorkflowStoreOptions {
  connection: StorageAccountConnection;
  /** The deployment prefix (SPEC §1): `PREFIX` of `ACCOUNT/PREFIX`. */
  prefix: string;
  /** Limit of each storage call. Default 30 000. */
  operationTimeoutInMs?: number;
  /** Create the workflows container and both tables when missing. Default true; read-only tools pass false. */
  createIfMissing?: boolean;
  /** Coordinator lease duration: whole seconds, 15 000–60 000. Default 60 000 (SPEC §9). */
  leaseDurationInMs?: number;
  /** Time between lease renewals, below the duration. Default 15 000 (SPEC §9). */
  renewIntervalInMs?: number;
  /** Task-row transactions in flight at once during a save. Default 8. */
  rowWriteConcurrency?: number;
  /** Extra blob pipeline policies (below the retry policy: every HTTP try is seen). */
  blobPolicies?: readonly RequestPolicyFactory[];
  /** Extra table pipeline policies (after the retry policy: every HTTP try is seen). */
  tablePolicies?: readonly TablePipelinePolicy[];
}

/** Settings of an {@link AzureWorkflowStore}, defaults applied. */
export interface WorkflowStoreSettings {
  operationTimeoutInMs: number;
  leaseDurationInMs: number;
  renewIntervalInMs: number;
  rowWriteConcurrency: number;
}

export const WORKFLOW_STORE_DEFAULTS: WorkflowStoreSettings = {
  operationTimeoutInMs: 30_000,
  leaseDurationInMs: 60_000,
  renewIntervalInMs: 15_000,
  rowWriteConcurrency: 8,
};

/** Default page sizes. */
const DEFAULT_WORKFLOW_PAGE = 100;
const DEFAULT_TASK_PAGE = 1_000;

const JSON_HEADERS = { blobContentType: 'application/json' };

function checkWorkflowId(workflowId: string): void {
  if (!isValidWorkflowId(workflowId)) {
    throw new JobqError('invalid-argument', 'a workflow id is 1–128 letters, digits, ".", "_" and "-", starting with a letter or digit');
  }
}

function checkTimestamp(at: string, what: string): void {
  if (typeof at !== 'string' || !Number.isFinite(Date.parse(at))) throw new JobqError('invalid-argument', `${what} must be an ISO-8601 timestamp`);
}

async function readStream(stream: NodeJS.ReadableStream | undefined): Promise<Buffer> {
  if (!stream) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(chunks);
}

/** True for the errors of a conditional write that lost (409 exists / 412 ETag mismatch). */
function lostCondition(error: unknown): boolean {
  return isJobqError(error, 'conflict');
}

/**
 * {@link WorkflowStore} on Azure Storage (SPEC §6).
 *
 * - The runtime blob `{p}-workflows/{id}.json` is the truth, written with If-None-Match (create)
 *   or If-Match (save).
 * - The index row and task rows are derived. `create` writes them after the blob, task rows first
 *   and the index row last, so an index row means a completed submit; a failure there fails the
 *   create. After a retryable failure resubmitting the id repairs it (an orphan blob is
 *   overwritten); after any other failure the create deletes what it wrote before throwing. After a successful
 *   `save`, a row failure does not fail the save (the runtime is stored): it comes back as
 *   `rowsError`, and the task rows that were not written are remembered and written with the next
 *   save of that workflow through this store (the index row is rewritten by every save anyway).
 *   `save` resolves only after its rows are written, so saves that follow each other (as one
 *   coordinator's do) never leave an older index row behind.
 * - `cancel_requested_at` / `retry_requested_at` are written only by `requestCancel` /
 *   `requestRetry`, each a Merge of that one property; saves never send them. Each request is
 *   also recorded in a request row (PartitionKey `requests`, see request-rows.ts) that the
 *   coordinator lists every scan and clears once applied.
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

  constructor(container: ContainerClient, index: TableClient, tasks: TableClient, names: StoreNames, settings: WorkflowStoreSettings) {
    checkLeaseSettings({ durationInMs: settings.leaseDurationInMs, renewIntervalInMs: settings.renewIntervalInMs, operationTimeoutInMs: settings.operationTimeoutInMs });
    if (!Number.isSafeInteger(settings.rowWriteConcurrency) || settings.rowWriteConcurrency < 1) {
      throw new JobqError('invalid-config', `rowWriteConcurrency must be a whole number ≥ 1, got ${settings.rowWriteConcurrency}`);
    }
    if (!(settings.operationTimeoutInMs > 0)) throw new JobqError('invalid-config', `operationTimeoutInMs must be positive, got ${settings.operationTimeoutInMs}`);
    this.container = container;
    this.index = index;
    this.tasks = tasks;
    this.names = names;
    this.settings = settings;
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
      storeCall({ operation: `create table "${this.names.indexTable}"` }, this.timeout, options, (abortSignal) => this.index.createTable({ abortSignal })),
      storeCall({ operation: `create table "${this.names.tasksTable}"` }, this.timeout, options, (abortSignal) => this.tasks.createTable({ abortSignal })),
    ]);
  }

  /** Deletes the workflows container and both tables of this prefix, with everything in them (tests, teardown). */
  async deleteStorage(options?: OperationOptions): Promise<void> {
    await Promise.all([
      storeCall({ operation: `delete container "${this.names.workflowsContainer}"` }, this.timeout, options, (abortSignal) =>
        this.container.deleteIfExists({ abortSignal }),
      ),
      storeCall({ operation: `delete table "${this.names.indexTable}"` }, this.timeout, options, (abortSignal) => this.index.deleteTable({ abortSignal })),
      storeCall({ operation: `delete table "${this.names.tasksTable}"` }, this.timeout, options, (abortSignal) => this.tasks.deleteTable({ abortSignal })),
    ]);
  }

  // ---- runtime blobs -------------------------------------------------------------------------

  private blob(workflowId: string) {
    return this.container.getBlockBlobClient(runtimeBlobName(workflowId));
  }

  /** Uploads a runtime under a condition; null when the condition failed (exists / ETag moved). */
  private async upload(
    workflowId: string,
    body: Buffer,
    conditions: { ifNoneMatch: '*' } | { ifMatch: string },
    operation: string,
    options: OperationOptions | undefined,
  ): Promise<string | null> {
    try {
      const response = await storeCall({ operation }, this.timeout, options, (abortSignal) =>
        this.blob(workflowId).upload(body, body.length, { conditions, blobHTTPHeaders: JSON_HEADERS, abortSignal }),
      );
      if (!response.etag) throw new JobqError('internal', `${operation}: the service returned no ETag`);
      return response.etag;
    } catch (error) {
      if (lostCondition(error)) return null;
      throw error;
    }
  }

  /** The blob's current ETag, or null when it does not exist. */
  private async currentEtag(workflowId: string, options: OperationOptions | undefined): Promise<string | null> {
    try {
      const properties = await storeCall({ operation: `read workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
        this.blob(workflowId).getProperties({ abortSignal }),
      );
      return properties.etag ?? null;
    } catch (error) {
      if (isJobqError(error, 'not-found')) return null;
      throw error;
    }
  }

  async create(runtime: WorkflowRuntime, definitionHash: string, options?: OperationOptions): Promise<CreateResult> {
    const id = runtime.workflowId;
    checkWorkflowId(id);
    if (typeof definitionHash !== 'string' || definitionHash === '') throw new JobqError('invalid-argument', 'a definition hash is required');
    const body = Buffer.from(encodeRuntime(runtime), 'utf8');
    const operation = `create workflow "${id}"`;
    // Each round either writes or learns something that changed under it; 3 rounds cover a
    // concurrent submit of the same id.
    for (let round = 0; round < 3; round++) {
      let etag = await this.upload(id, body, { ifNoneMatch: '*' }, operation, options);
      if (etag === null) {
        const row = await this.indexRow(id, options);
        const storedHash = typeof row?.definition_hash === 'string' ? row.definition_hash : '';
        if (storedHash !== '') {
          if (storedHash !== definitionHash) throw new JobqError('conflict', `workflow "${id}" already exists with a different definition`, { details: { workflowId: id } });
          const current = await this.currentEtag(id, options);
          if (current !== null) return { etag: current, created: false };
          continue; // deleted meanwhile
        }
        // A blob without a (completed) index row: a submit that crashed. Overwrite it (SPEC §6).
        const orphan = await this.currentEtag(id, options);
        if (orphan === null) continue;
        etag = await this.upload(id, body, { ifMatch: orphan }, operation, options);
        if (etag === null) continue;
        await deleteForeignTaskRows(this.tasks, runtime, this.rowSettings(), options);
      }
      await this.writeSubmitRows(runtime, definitionHash, etag, options);
      return { etag, created: true };
    }
    throw new JobqError('conflict', `workflow "${id}" is being submitted by someone else at the same time`, { details: { workflowId: id } });
  }

  /**
   * Every task row, then the index row (its presence marks a completed submit). A retryable failure
   * leaves the runtime for a resubmit of the same id to complete. Any other failure (a row the
   * service refuses, e.g. 400 PropertyValueTooLarge) would fail again the same way: the task rows
   * and the runtime blob this create wrote are deleted before it throws, so nothing is left and a
   * corrected workflow can take the id.
   */
  private async writeSubmitRows(runtime: WorkflowRuntime, definitionHash: string, etag: string, options: OperationOptions | undefined): Promise<void> {
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
      throw new JobqError(error.code, `${error.message}; the runtime of workflow "${id}" was written but its submit did not finish: submit the same id again to complete it`, {
        retryable: true,
        details,
      });
    }
    const undone = await this.undoCreate(id, etag, options).then(
      () => null,
      (undoError: unknown) => (isJobqError(undoError) ? undoError : new JobqError('internal', String(undoError))),
    );
    const outcome =
      undone === null
        ? `workflow "${id}" was not submitted and nothing of it was kept`
        : `workflow "${id}" was not submitted, and removing the runtime it had written failed too (${undone.message}); a submit of the same id replaces it`;
    throw new JobqError(error.code, `${error.message}; ${outcome}`, { retryable: false, details: { ...details, cleanedUp: undone === null } });
  }

  /** Deletes the task rows and (if it is still the one written, `etag`) the runtime blob of a create that cannot finish. */
  private async undoCreate(workflowId: string, etag: string, options: OperationOptions | undefined): Promise<void> {
    try {
      await deleteAllTaskRows(this.tasks, workflowId, this.rowSettings(), options);
    } catch (error) {
      if (!isJobqError(error, 'not-found')) throw error; // no task table: no rows
    }
    try {
      await storeCall({ operation: `delete the runtime of workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
        this.blob(workflowId).delete({ conditions: { ifMatch: etag }, abortSignal }),
      );
    } catch (error) {
      // Gone already, or replaced by another submit of the id since: not ours to delete.
      if (!isJobqError(error, 'not-found') && !isJobqError(error, 'conflict')) throw error;
    }
  }

  async load(workflowId: string, options?: OperationOptions): Promise<LoadedRuntime | null> {
    checkWorkflowId(workflowId);
    let loaded: { text: string; etag: string };
    try {
      loaded = await storeCall({ operation: `load workflow "${workflowId}"` }, this.timeout, options, async (abortSignal) => {
        const response = await this.blob(workflowId).download(0, undefined, { abortSignal });
        const bytes = await readStream(response.readableStreamBody);
        if (!response.etag) throw new JobqError('internal', `load workflow "${workflowId}": the service returned no ETag`);
        return { text: bytes.toString('utf8'), etag: response.etag };
      });
    } catch (error) {
      if (isJobqError(error, 'not-found')) return null;
      throw error;
    }
    try {
      const runtime = decodeRuntime(loaded.text);
      if (runtime.workflowId !== workflowId) throw new RuntimeDecodeError(`it holds workflow "${runtime.workflowId}"`);
      return { runtime, etag: loaded.etag };
    } catch (error) {
      if (!(error instanceof RuntimeDecodeError)) throw error;
      // Never quote the blob: a JSON parse error would echo its text.
      const reason = error.message.startsWith('runtime blob: not JSON') ? 'it is not JSON' : error.message.replace(/^runtime blob: /, '').slice(0, 300);
      throw new JobqError('corrupt', `the runtime of workflow "${workflowId}" cannot be read: ${reason}`, { details: { workflowId } });
    }
  }

  async save(runtime: WorkflowRuntime, etag: string, options?: SaveOptions): Promise<SaveResult> {
    const id = runtime.workflowId;
    checkWorkflowId(id);
    const previous = options?.previous;
    if (previous && previous.workflowId !== id) throw new JobqError('invalid-argument', `save workflow "${id}": "previous" is the runtime of another workflow`);
    const body = Buffer.from(encodeRuntime(runtime), 'utf8');
    let saved: string | null;
    try {
      saved = await this.upload(id, body, { ifMatch: etag }, `save workflow "${id}"`, options);
    } catch (error) {
      // Azure answers a conditional write of a missing blob with 412 or 404 BlobNotFound: both lose.
      if (!isJobqError(error, 'not-found') || error.details.serviceCode !== 'BlobNotFound') throw error;
      saved = null;
    }
    if (saved === null) {
      throw new JobqError('conflict', `workflow "${id}" changed since it was loaded (ETag mismatch), or no longer exists: nothing was written; load it and apply the events again`, {
        details: { workflowId: id },
      });
    }
    return { etag: saved, rowsError: await this.writeDerivedRows(runtime, changedTasks(previous, runtime), options) };
  }

  /** The index row and the given task rows (plus those an earlier save could not write); the first error, or null. */
  private async writeDerivedRows(runtime: WorkflowRuntime, changed: string[], options: OperationOptions | undefined): Promise<JobqError | null> {
    const id = runtime.workflowId;
    let names = changed;
    const unwritten = this.unwrittenTaskRows.get(id);
    if (unwritten) {
      const set = new Set(changed);
      for (const name of unwritten) if (taskState(runtime, name)) set.add(name);
      names = [...set];
    }
    const [indexError, rows] = await Promise.all([
      this.mergeIndexRow(runtime, undefined, options).then(
        () => null,
        (error: unknown) => (isJobqError(error) ? error : new JobqError('internal', String(error))),
      ),
      writeTaskRows(this.tasks, runtime, names, this.rowSettings(), options),
    ]);
    if (rows.failed.length > 0) this.unwrittenTaskRows.set(id, new Set(rows.failed));
    else this.unwrittenTaskRows.delete(id);
    const error = indexError ?? rows.error;
    if (!error) return null;
    return new JobqError(error.code, `workflow "${id}" was saved, but some of its index/task rows were not written (they are written again with its next save): ${error.message}`, {
      retryable: error.retryable,
      details: { ...error.details, workflowId: id, unwrittenTaskRows: rows.failed.length, indexRowWritten: indexError === null },
    });
  }

  private rowSettings() {
    return { timeoutInMs: this.timeout, concurrency: this.settings.rowWriteConcurrency };
  }

  private async mergeIndexRow(runtime: WorkflowRuntime, definitionHash: string | undefined, options: OperationOptions | undefined): Promise<void> {
    const entity = indexEntity(runtime, definitionHash);
    await storeCall({ operation: `write the index row of workflow "${runtime.workflowId}"` }, this.timeout, options, (abortSignal) =>
      this.index.upsertEntity(entity, 'Merge', { abortSignal }),
    );
  }

  // ---- index -----------------------------------------------------------------------------------

  private async indexRow(workflowId: string, options: OperationOptions | undefined): Promise<TableEntityResult<Record<string, unknown>> | null> {
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
    try {
      if (filter.recent || derivedPending) {
        decodeCursor(filter.continuationToken, 'offset'); // a bad token fails before the scan
        const serverFilter = allOf([...conditions, derivedPending ? undefined : statusFilter(statuses)]);
        const rows = await tableScan(this.index, { operation, filter: serverFilter }, this.timeout, filter);
        const summaries = rows.map(summaryOf).filter(wanted);
        if (filter.recent) summaries.sort(byRecent);
        return offsetPage(summaries, limit, filter.continuationToken);
      }
      return await tablePage(
        this.index,
        { operation, filter: allOf([...conditions, statusFilter(statuses)]) },
        limit,
        filter.continuationToken,
        (row) => {
          const summary = summaryOf(row);
          return wanted(summary) ? summary : null;
        },
        this.timeout,
        filter,
      );
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

  private async requestAt(workflowId: string, property: string, what: string, at: string, options: OperationOptions | undefined): Promise<void> {
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
    if (typeof etag !== 'string' || etag === '') throw new JobqError('invalid-argument', 'clearing a request needs the ETag it was listed with');
    return deleteRequestRow(this.index, workflowId, etag, this.timeout, options);
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
   * request row, and the index row last.
   */
  purge(workflowId: string, options?: PurgeOptions): Promise<PurgeResult> {
    return purgeWorkflow(
      {
        readIndexRow: (id, op) => this.getWorkflow(id, op),
        load: (id, op) => this.load(id, op),
        deleteRuntime: (id, etag, op) => this.deleteRuntime(id, etag, op),
        deleteWorkflowBlobs: (id, op) => this.deleteWorkflowBlobs(id, op),
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

  /**
   * Deletes the runtime blob if it is still at `etag` (null: at whatever ETag it has now).
   * `changed` when a save moved it on, `gone` when there is none.
   */
  private async deleteRuntime(workflowId: string, etag: string | null, options: OperationOptions | undefined): Promise<'deleted' | 'changed' | 'gone'> {
    const ifMatch = etag ?? (await this.currentEtag(workflowId, options));
    if (ifMatch === null) return 'gone';
    try {
      await storeCall({ operation: `delete the runtime of workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
        this.blob(workflowId).delete({ conditions: { ifMatch }, deleteSnapshots: 'include', abortSignal }),
      );
      return 'deleted';
    } catch (error) {
      if (isJobqError(error, 'not-found')) return 'gone';
      if (isJobqError(error, 'conflict')) return 'changed';
      throw error;
    }
  }

  /**
   * Deletes every blob of a workflow in the workflows container but its runtime blob: the
   * `{folder}/{workflow_id}/` folders of `stateFolders` (upstream overflow blobs), never a bare
   * `{workflow_id}` prefix (ids may contain dots: `a` must not reach `a.b`). Returns how many.
   */
  async deleteWorkflowBlobs(workflowId: string, options?: OperationOptions): Promise<number> {
    return deleteBlobFolders(this.container, stateFolders(workflowId), { timeoutInMs: this.timeout, concurrency: this.settings.rowWriteConcurrency }, options);
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
    const query = { operation: filter.workflowId ? `list the tasks of workflow "${filter.workflowId}"` : 'list tasks', filter: taskQueryFilter(filter) };
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
      { durationInMs: this.settings.leaseDurationInMs, renewIntervalInMs: this.settings.renewIntervalInMs, operationTimeoutInMs: this.timeout },
      options,
    );
  }

  writeCoordinatorStats(stats: CoordinatorStats, options?: OperationOptions): Promise<void> {
    return writeStats(this.container, this.names.statsBlob, stats, this.timeout, options);
  }

  readCoordinatorStats(options?: OperationOptions): Promise<CoordinatorStats | null> {
    return readStats(this.container, this.names.statsBlob, this.timeout, options);
  }
}

/**
 * Opens the workflow store of a prefix, creating its container and tables unless
 * `createIfMissing: false`. `invalid-config` for a bad prefix, connection or setting; `auth` when
 * the credential is refused.
 */
export async function openWorkflowStore(options: OpenWorkflowStoreOptions): Promise<AzureWorkflowStore> {
  const names = storeNames(options.prefix);
  const settings: WorkflowStoreSettings = {
    operationTimeoutInMs: options.operationTimeoutInMs ?? WORKFLOW_STORE_DEFAULTS.operationTimeoutInMs,
    leaseDurationInMs: options.leaseDurationInMs ?? WORKFLOW_STORE_DEFAULTS.leaseDurationInMs,
    renewIntervalInMs: options.renewIntervalInMs ?? WORKFLOW_STORE_DEFAULTS.renewIntervalInMs,
    rowWriteConcurrency: options.rowWriteConcurrency ?? WORKFLOW_STORE_DEFAULTS.rowWriteConcurrency,
  };
  const clients = accountClients(options.connection, {
    operationTimeoutInMs: settings.operationTimeoutInMs,
    ...(options.blobPolicies ? { blobPolicies: options.blobPolicies } : {}),
  });
  const table = (name: string): TableClient => {
    const client = clients.table(name);
    for (const policy of options.tablePolicies ?? []) client.pipeline.addPolicy(policy, { afterPhase: 'Retry' });
    return client;
  };
  const store = new AzureWorkflowStore(clients.container(names.workflowsContainer), table(names.indexTable), table(names.tasksTable), names, settings);
  if (options.createIfMissing ?? true) await store.ensureExists();
  return store;
}
