import { odata, type TableClient, type TableEntityResult } from '@azure/data-tables';
import {
  JobqError,
  isJobqError,
  isValidRerunRequestId,
  type NewRerunRequest,
  type OperationOptions,
  type Page,
  type RerunFilter,
  type RerunRequest,
} from '@jobq/ports';
import { storeCall } from './errors';
import { sharedPartitionPage } from './shard-paging';
import { pageLimit, tableScan } from './workflow-paging';

/**
 * Re-run records: one row per request to re-run a task (docs/failure-model.md, "Re-running a
 * task"), in the index table under one fixed PartitionKey, `reruns` — outside the hash buckets of
 * the index rows and the `requests` partition — with RowKey = `{workflow id}~{request id}` (`~`
 * comes after every character of a workflow id and a request id, so one workflow's records form one
 * range of keys, never mixed with another's: `a~…` sorts after `a.b~…` and `a-b~…`) and the
 * properties `task_name`, `downstream` and `requested_at`. Each request is inserted as a row of its
 * own (never merged), so two requests never overwrite each other.
 */
export const RERUNS_PARTITION = 'reruns';

const SEPARATOR = '~';
/** Sorts after every character a request id may hold: the end of one workflow's range. */
const RANGE_END = '~~';

/** Default page of {@link listRerunRows}. */
const DEFAULT_RERUN_PAGE = 1_000;

const TASK_NAME = 'task_name';
const DOWNSTREAM = 'downstream';
const REQUESTED_AT = 'requested_at';

function rowKeyOf(workflowId: string, requestId: string): string {
  return `${workflowId}${SEPARATOR}${requestId}`;
}

/** A re-run row as a {@link RerunRequest}; null for a row that is not one. */
function rerunOf(row: TableEntityResult<Record<string, unknown>>): RerunRequest | null {
  const key = row.rowKey ?? '';
  const cut = key.indexOf(SEPARATOR);
  const taskName = row[TASK_NAME];
  const requestedAt = row[REQUESTED_AT];
  if (cut <= 0 || !row.etag || typeof taskName !== 'string' || typeof requestedAt !== 'string') return null;
  return {
    workflowId: key.slice(0, cut),
    requestId: key.slice(cut + 1),
    taskName,
    downstream: row[DOWNSTREAM] === true,
    requestedAt,
    etag: row.etag,
  };
}

/** Checks a request id: see `isValidRerunRequestId`. */
export function checkRequestId(requestId: unknown): asserts requestId is string {
  if (!isValidRerunRequestId(requestId))
    throw new JobqError('invalid-argument', 'a re-run request id is 1–64 letters, digits, "_" and "-", starting with a letter or digit');
}

/** Inserts a re-run row (`conflict` when its id is recorded already). */
export async function insertRerunRow(
  index: TableClient,
  request: NewRerunRequest,
  timeoutInMs: number,
  options: OperationOptions | undefined,
): Promise<void> {
  await storeCall(
    { operation: `record re-run request ${request.requestId} of workflow "${request.workflowId}"` },
    timeoutInMs,
    options,
    (abortSignal) =>
      index.createEntity(
        {
          partitionKey: RERUNS_PARTITION,
          rowKey: rowKeyOf(request.workflowId, request.requestId),
          [TASK_NAME]: request.taskName,
          [DOWNSTREAM]: request.downstream,
          [REQUESTED_AT]: request.requestedAt,
        },
        { abortSignal },
      ),
  );
}

/** The OData filter of the re-run rows (of one workflow: its range of keys). */
function rerunFilter(workflowId: string | undefined): string {
  if (workflowId === undefined) return odata`PartitionKey eq ${RERUNS_PARTITION}`;
  return odata`PartitionKey eq ${RERUNS_PARTITION} and RowKey gt ${workflowId + SEPARATOR} and RowKey lt ${workflowId + RANGE_END}`;
}

/** The re-run rows (of one workflow with `filter.workflowId`), in key order, paged by the service. No index table: none. */
export async function listRerunRows(index: TableClient, filter: RerunFilter, timeoutInMs: number): Promise<Page<RerunRequest>> {
  const limit = pageLimit(filter.limit, DEFAULT_RERUN_PAGE);
  // All shards' re-run requests share the partition: a shard's listing keeps its own (docs/sharding.md).
  const query = { operation: 'list re-run requests', filter: rerunFilter(filter.workflowId) };
  return sharedPartitionPage(index, query, limit, filter, rerunOf, timeoutInMs);
}

/** Every re-run row of one workflow. */
export async function allRerunRows(
  index: TableClient,
  workflowId: string,
  timeoutInMs: number,
  options: OperationOptions | undefined,
): Promise<RerunRequest[]> {
  try {
    const rows = await tableScan(
      index,
      { operation: `list the re-run requests of workflow "${workflowId}"`, filter: rerunFilter(workflowId) },
      timeoutInMs,
      options,
    );
    return rows.flatMap((row) => rerunOf(row) ?? []);
  } catch (error) {
    if (isJobqError(error, 'not-found')) return [];
    throw error;
  }
}

/**
 * Deletes a re-run row if it is still at `etag` (`*`: whatever it holds). True when deleted; false
 * when it changed since or is gone.
 */
export async function deleteRerunRow(
  index: TableClient,
  workflowId: string,
  requestId: string,
  etag: string,
  timeoutInMs: number,
  options: OperationOptions | undefined,
): Promise<boolean> {
  try {
    await storeCall({ operation: `clear re-run request ${requestId} of workflow "${workflowId}"` }, timeoutInMs, options, (abortSignal) =>
      index.deleteEntity(RERUNS_PARTITION, rowKeyOf(workflowId, requestId), { etag, abortSignal }),
    );
    return true;
  } catch (error) {
    if (isJobqError(error, 'conflict') || isJobqError(error, 'not-found')) return false;
    throw error;
  }
}
