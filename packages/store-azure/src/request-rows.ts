import { odata, type TableClient, type TableEntityResult } from '@azure/data-tables';
import { isJobqError, type OperationOptions, type Page, type RequestFilter, type WorkflowRequest } from '@jobq/ports';
import { storeCall } from './errors';
import { CANCEL_REQUESTED, RETRY_REQUESTED } from './index-table';
import { sharedPartitionPage } from './shard-paging';
import { pageLimit } from './workflow-paging';

/**
 * Request rows: a workflow with a cancel or retry request the coordinator has not yet taken care
 * of. They live in the index table under one fixed PartitionKey, `requests` — outside the 16 hash
 * buckets (`0`–`f`) of the index rows, and never matched by the index's status or time filters —
 * with RowKey = the workflow id and the request times (`cancel_requested_at`,
 * `retry_requested_at`, each written by its own Merge). Listing them is a query of one partition:
 * its cost follows the number of outstanding requests, whatever the number of workflows.
 */
export const REQUESTS_PARTITION = 'requests';

/** Default page of {@link listRequestRows}. */
const DEFAULT_REQUEST_PAGE = 1_000;

function text(row: Readonly<Record<string, unknown>>, key: string): string | null {
  const value = row[key];
  return typeof value === 'string' && value !== '' ? value : null;
}

/** A request row as a {@link WorkflowRequest}; null for a row without an ETag. */
export function requestOf(row: TableEntityResult<Record<string, unknown>>): WorkflowRequest | null {
  if (!row.rowKey || !row.etag) return null;
  return {
    workflowId: row.rowKey,
    cancelRequestedAt: text(row, CANCEL_REQUESTED),
    retryRequestedAt: text(row, RETRY_REQUESTED),
    etag: row.etag,
  };
}

/** Records a request time (`property`) in the workflow's request row (a Merge: the other kind's time stays). */
export async function writeRequestRow(
  index: TableClient,
  workflowId: string,
  property: string,
  at: string,
  timeoutInMs: number,
  options: OperationOptions | undefined,
): Promise<void> {
  await storeCall({ operation: `record the request of workflow "${workflowId}"` }, timeoutInMs, options, (abortSignal) =>
    index.upsertEntity({ partitionKey: REQUESTS_PARTITION, rowKey: workflowId, [property]: at }, 'Merge', { abortSignal }),
  );
}

/** The request rows, in pages of the service (workflow id order). No index table: none. */
export async function listRequestRows(index: TableClient, filter: RequestFilter, timeoutInMs: number): Promise<Page<WorkflowRequest>> {
  const limit = pageLimit(filter.limit, DEFAULT_REQUEST_PAGE);
  // All shards' requests share the partition: a shard's listing keeps its own (docs/sharding.md).
  const query = { operation: 'list workflow requests', filter: odata`PartitionKey eq ${REQUESTS_PARTITION}` };
  return sharedPartitionPage(index, query, limit, filter, requestOf, timeoutInMs);
}

/**
 * Deletes a request row if it is still at `etag` (`*`: whatever it holds). True when deleted;
 * false when it changed since (a newer request) or is gone.
 */
export async function deleteRequestRow(
  index: TableClient,
  workflowId: string,
  etag: string,
  timeoutInMs: number,
  options: OperationOptions | undefined,
): Promise<boolean> {
  try {
    await storeCall({ operation: `clear the request of workflow "${workflowId}"` }, timeoutInMs, options, (abortSignal) =>
      index.deleteEntity(REQUESTS_PARTITION, workflowId, { etag, abortSignal }),
    );
    return true;
  } catch (error) {
    if (isJobqError(error, 'conflict') || isJobqError(error, 'not-found')) return false;
    throw error;
  }
}
