import { odata, type TableClient, type TableEntityResult } from '@azure/data-tables';
import { shardOf } from '@jobq/dag-core';
import { JobqError, checkShardFilter, isJobqError, type ShardFilter } from '@jobq/ports';
import type { CallOptions } from './errors';
import { allOf } from './index-table';
import { tablePage, tableScan, type TableQuery } from './workflow-paging';

/**
 * A shard's listings (docs/sharding.md): shard k of n is the index partitions p with p mod n = k,
 * so its index queries are partition queries of those partitions only, one after another; request
 * and re-run rows (one partition each, shared by all shards) are filtered by `shardOf`.
 */

/** The index PartitionKeys of a shard (`0`–`f`), in key order; `invalid-argument` for a filter that names no shard. */
export function shardPartitions(shard: ShardFilter): string[] {
  checkShardFilter(shard);
  return Array.from({ length: 16 }, (_, p) => p)
    .filter((p) => p % shard.count === shard.index)
    .map((p) => p.toString(16));
}

/** Whether a workflow id is in the filter's shard (every id without one); `invalid-argument` for a filter that names no shard. */
export function shardTest(shard: ShardFilter | undefined): (workflowId: string) => boolean {
  if (shard === undefined) return () => true;
  checkShardFilter(shard);
  return (workflowId) => shardOf(workflowId, shard.count) === shard.index;
}

/**
 * A page of the request or re-run rows (one partition shared by all shards) that decode and belong
 * to `filter.shard`, in key order. No index table: an empty page.
 */
export async function sharedPartitionPage<T extends { workflowId: string }>(
  client: TableClient,
  query: TableQuery,
  limit: number,
  filter: CallOptions & { shard?: ShardFilter; continuationToken?: string },
  decode: (row: TableEntityResult<Record<string, unknown>>) => T | null,
  timeoutInMs: number,
): Promise<{ items: T[]; continuationToken: string | null }> {
  const inShard = shardTest(filter.shard);
  const mine = (row: TableEntityResult<Record<string, unknown>>): T | null => {
    const item = decode(row);
    return item !== null && inShard(item.workflowId) ? item : null;
  };
  try {
    return await tablePage(client, query, limit, filter.continuationToken, mine, timeoutInMs, filter);
  } catch (error) {
    if (isJobqError(error, 'not-found')) return { items: [], continuationToken: null };
    throw error;
  }
}

/** Where a partitioned listing goes on: the position in the shard's partitions, and the service's token inside it. */
interface PartitionCursor {
  position: number;
  token: string | undefined;
}

function encodePartitionCursor(cursor: PartitionCursor): string {
  return Buffer.from(
    JSON.stringify({ v: 1, p: cursor.position, ...(cursor.token === undefined ? {} : { t: cursor.token }) }),
    'utf8',
  ).toString('base64url');
}

function decodePartitionCursor(token: string | undefined, partitions: number): PartitionCursor | undefined {
  if (token === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    json = undefined;
  }
  const j = (typeof json === 'object' && json !== null ? json : {}) as { v?: unknown; p?: unknown; t?: unknown };
  if (
    j.v === 1 &&
    typeof j.p === 'number' &&
    Number.isSafeInteger(j.p) &&
    j.p >= 0 &&
    j.p < partitions &&
    (j.t === undefined || typeof j.t === 'string')
  ) {
    return { position: j.p, token: j.t };
  }
  throw new JobqError(
    'invalid-argument',
    'the continuation token was not made by this listing (pass back the token of the previous page, with the same filter)',
  );
}

function inPartition(query: TableQuery, partition: string): TableQuery {
  return { ...query, filter: allOf([odata`PartitionKey eq ${partition}`, query.filter]) };
}

/**
 * A page of up to `limit` mapped items from the partitions, in key order: a partition query of one
 * partition after another, each paged by the service. The token says which partition to go on in,
 * and where.
 */
export async function partitionedTablePage<T>(
  client: TableClient,
  query: TableQuery,
  partitions: readonly string[],
  limit: number,
  token: string | undefined,
  map: (entity: TableEntityResult<Record<string, unknown>>) => T | null,
  timeoutInMs: number,
  options: CallOptions | undefined,
): Promise<{ items: T[]; continuationToken: string | null }> {
  const items: T[] = [];
  const cursor = decodePartitionCursor(token, partitions.length);
  let position = cursor?.position ?? 0;
  let inner = cursor?.token;
  while (position < partitions.length) {
    const page = await tablePage(client, inPartition(query, partitions[position]!), limit - items.length, inner, map, timeoutInMs, options);
    items.push(...page.items);
    if (page.continuationToken !== null)
      return { items, continuationToken: encodePartitionCursor({ position, token: page.continuationToken }) };
    position++;
    inner = undefined;
    if (items.length >= limit) break;
  }
  return { items, continuationToken: position < partitions.length ? encodePartitionCursor({ position, token: undefined }) : null };
}

/** Every entity of the partitions matching the query, partition by partition, in key order. */
export async function partitionedTableScan(
  client: TableClient,
  query: TableQuery,
  partitions: readonly string[],
  timeoutInMs: number,
  options: CallOptions | undefined,
): Promise<TableEntityResult<Record<string, unknown>>[]> {
  const all: TableEntityResult<Record<string, unknown>>[] = [];
  for (const partition of partitions) all.push(...(await tableScan(client, inPartition(query, partition), timeoutInMs, options)));
  return all;
}
