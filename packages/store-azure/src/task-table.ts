import { odata, type TableClient, type TableEntityResult, type TransactionAction } from '@azure/data-tables';
import { TASK_STATUSES, taskQueue, taskState, type TaskStatus, type WorkflowDefinition, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError, isJobqError, mapLimit, type TaskFilter, type TaskRow } from '@jobq/ports';
import { storeCall, translateStoreError, type CallOptions } from './errors';
import { shortenError, statusFilter } from './index-table';
import { decodeTaskRowKey, encodeTaskRowKey, prefixRangeEnd } from './names';
import { tableScan } from './workflow-paging';

/**
 * The task rows (`{PREFIX}WorkflowTasks`, docs/design.md#storage-layout): PartitionKey = workflow id, RowKey = the task
 * name encoded so that name prefixes stay RowKey prefixes. Written with Merge upserts in table
 * transactions (one partition, ≤ 100 entities each).
 */

/** Most entities one table transaction may hold. */
export const MAX_BATCH_ENTITIES = 100;

const queueCache = new WeakMap<WorkflowDefinition, ReadonlyMap<string, string>>();

/** Task name → queue spec of a definition (cached per definition object: saves share it). */
function queueByTask(definition: WorkflowDefinition): ReadonlyMap<string, string> {
  let map = queueCache.get(definition);
  if (!map) {
    map = new Map(definition.tasks.map((t) => [t.name, taskQueue(definition, t)]));
    queueCache.set(definition, map);
  }
  return map;
}

/** The outcome of {@link writeTaskRows}: the tasks whose batch failed, and the first error. */
export interface TaskRowsOutcome {
  failed: string[];
  error: JobqError | null;
}

/** Settings of {@link writeTaskRows}. */
export interface TaskRowWriteSettings {
  timeoutInMs: number;
  /** Transactions in flight at once. */
  concurrency: number;
}

/**
 * Merges the rows of `names` (tasks of `runtime`), 100 per transaction, `concurrency` at a time.
 * A failed transaction does not stop the others: its tasks are reported back so that they can be
 * written again later.
 */
export async function writeTaskRows(
  client: TableClient,
  runtime: WorkflowRuntime,
  names: readonly string[],
  settings: TaskRowWriteSettings,
  options: CallOptions | undefined,
): Promise<TaskRowsOutcome> {
  const queues = queueByTask(runtime.definition);
  const batches: string[][] = [];
  for (let i = 0; i < names.length; i += MAX_BATCH_ENTITIES) batches.push(names.slice(i, i + MAX_BATCH_ENTITIES));
  const outcome: TaskRowsOutcome = { failed: [], error: null };
  const operation = `write task rows of workflow "${runtime.workflowId}"`;
  await mapLimit(batches, settings.concurrency, async (batch) => {
    const actions: TransactionAction[] = [];
    for (const name of batch) {
      const state = taskState(runtime, name);
      if (!state) continue;
      const entity = {
        partitionKey: runtime.workflowId,
        rowKey: encodeTaskRowKey(name),
        status: state.status,
        queue: queues.get(name) ?? runtime.definition.defaultQueue,
        attempt_no: state.attemptNo,
        updated_at: runtime.updatedAt,
        error: shortenError(state.error),
      };
      actions.push(['upsert', entity, 'Merge']);
    }
    if (actions.length === 0) return;
    try {
      await storeCall({ operation }, settings.timeoutInMs, options, (abortSignal) => client.submitTransaction(actions, { abortSignal }));
    } catch (error) {
      outcome.failed.push(...batch);
      outcome.error ??= translateStoreError(error, { operation });
    }
  });
  return outcome;
}

/**
 * Deletes the rows of a workflow's partition whose task name `drop` selects, 100 per transaction,
 * `settings.concurrency` at a time; returns how many. Reads the partition's keys first. A row gone
 * meanwhile (another deletion) fails its whole transaction: its rows are then deleted one by one.
 */
async function deletePartitionRows(
  client: TableClient,
  workflowId: string,
  drop: (taskName: string) => boolean,
  operation: string,
  settings: TaskRowWriteSettings,
  options: CallOptions | undefined,
): Promise<number> {
  const rows = await tableScan(
    client,
    { operation, filter: odata`PartitionKey eq ${workflowId}`, select: ['RowKey'] },
    settings.timeoutInMs,
    options,
  );
  const doomed = rows.map((r) => r.rowKey ?? '').filter((key) => key !== '' && drop(decodeTaskRowKey(key)));
  const batches: string[][] = [];
  for (let i = 0; i < doomed.length; i += MAX_BATCH_ENTITIES) batches.push(doomed.slice(i, i + MAX_BATCH_ENTITIES));
  let deleted = 0;
  await mapLimit(batches, settings.concurrency, async (batch) => {
    const actions: TransactionAction[] = batch.map((rowKey) => ['delete', { partitionKey: workflowId, rowKey }]);
    try {
      await storeCall({ operation }, settings.timeoutInMs, options, (abortSignal) => client.submitTransaction(actions, { abortSignal }));
      deleted += batch.length;
    } catch (error) {
      if (!isJobqError(error, 'not-found')) throw error;
      for (const rowKey of batch) {
        try {
          await storeCall({ operation }, settings.timeoutInMs, options, (abortSignal) =>
            client.deleteEntity(workflowId, rowKey, { abortSignal }),
          );
          deleted++;
        } catch (one) {
          if (!isJobqError(one, 'not-found')) throw one;
        }
      }
    }
  });
  return deleted;
}

/**
 * Deletes the rows of a workflow's partition that name no task of `runtime` (left by an orphan
 * runtime with another definition, before it was overwritten).
 */
export async function deleteForeignTaskRows(
  client: TableClient,
  runtime: WorkflowRuntime,
  settings: TaskRowWriteSettings,
  options: CallOptions | undefined,
): Promise<void> {
  const id = runtime.workflowId;
  const isForeign = (name: string) => taskState(runtime, name) === undefined;
  await deletePartitionRows(client, id, isForeign, `clear old task rows of workflow "${id}"`, settings, options);
}

/** Deletes every task row of a workflow (a submit that cannot finish takes back what it wrote; a purge); returns how many. */
export function deleteAllTaskRows(
  client: TableClient,
  workflowId: string,
  settings: TaskRowWriteSettings,
  options: CallOptions | undefined,
): Promise<number> {
  return deletePartitionRows(client, workflowId, () => true, `delete the task rows of workflow "${workflowId}"`, settings, options);
}

/** The OData filter of a task listing; `invalid-argument` for a name prefix without a workflow. */
export function taskQueryFilter(filter: TaskFilter): string | undefined {
  const parts: string[] = [];
  if (filter.workflowId !== undefined) parts.push(odata`PartitionKey eq ${filter.workflowId}`);
  if (filter.namePrefix !== undefined && filter.namePrefix !== '') {
    if (filter.workflowId === undefined) throw new JobqError('invalid-argument', 'listing tasks by name prefix needs a workflow id');
    const start = encodeTaskRowKey(filter.namePrefix);
    parts.push(odata`RowKey ge ${start} and RowKey lt ${prefixRangeEnd(start)}`);
  }
  const statuses = statusFilter(filter.status);
  if (statuses) parts.push(statuses);
  if (filter.queue !== undefined) parts.push(odata`queue eq ${filter.queue}`);
  return parts.length > 0 ? parts.join(' and ') : undefined;
}

/** A stored task row as a {@link TaskRow}; null for a row that is not one. */
export function taskRowOf(row: TableEntityResult<Record<string, unknown>>): TaskRow | null {
  const status = row.status;
  if (typeof status !== 'string' || !TASK_STATUSES.includes(status as TaskStatus)) return null;
  const attempt = row.attempt_no;
  return {
    workflowId: row.partitionKey ?? '',
    taskName: decodeTaskRowKey(row.rowKey ?? ''),
    status: status as TaskStatus,
    queue: typeof row.queue === 'string' ? row.queue : '',
    attemptNo: typeof attempt === 'number' ? attempt : 0,
    updatedAt: typeof row.updated_at === 'string' ? row.updated_at : '',
    error: typeof row.error === 'string' && row.error !== '' ? row.error : null,
  };
}
