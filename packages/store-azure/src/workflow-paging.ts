import type { TableClient, TableEntityResult } from '@azure/data-tables';
import { JobqError } from '@jobq/ports';
import { storeCall, type CallOptions } from './errors';

/** Largest page the Table service returns. */
export const TABLE_MAX_PAGE_SIZE = 1_000;

/**
 * Where the next page starts. Opaque to callers (base64url JSON): either the Table service's own
 * continuation (key order, paged by the service) or an offset into a list sorted in memory.
 */
export type PageCursor = { kind: 'table'; token: string } | { kind: 'offset'; offset: number };

export function encodeCursor(cursor: PageCursor): string {
  const json = cursor.kind === 'table' ? { v: 1, t: cursor.token } : { v: 1, o: cursor.offset };
  return Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
}

/** Reads a token made by {@link encodeCursor}; `invalid-argument` for anything else or the wrong kind. */
export function decodeCursor(token: string | undefined, expected: PageCursor['kind']): PageCursor | undefined {
  if (token === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    json = undefined;
  }
  const j = (typeof json === 'object' && json !== null ? json : {}) as { v?: unknown; t?: unknown; o?: unknown };
  if (j.v === 1 && expected === 'table' && typeof j.t === 'string') return { kind: 'table', token: j.t };
  if (j.v === 1 && expected === 'offset' && typeof j.o === 'number' && Number.isSafeInteger(j.o) && j.o >= 0)
    return { kind: 'offset', offset: j.o };
  throw new JobqError(
    'invalid-argument',
    'the continuation token was not made by this listing (pass back the token of the previous page, with the same filter)',
  );
}

/** Checks a page size: an integer ≥ 1 (default `fallback`). */
export function pageLimit(limit: number | undefined, fallback: number): number {
  if (limit === undefined) return fallback;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new JobqError('invalid-argument', `limit must be a whole number ≥ 1, got ${limit}`);
  return limit;
}

/** What one listing asks the Table service. */
export interface TableQuery {
  operation: string;
  filter: string | undefined;
  select?: string[];
}

/** One page of raw entities, as the service returned it. */
async function fetchPage(
  client: TableClient,
  query: TableQuery,
  maxPageSize: number,
  continuationToken: string | undefined,
  timeoutInMs: number,
  options: CallOptions | undefined,
): Promise<{ entities: TableEntityResult<Record<string, unknown>>[]; next: string | undefined }> {
  return storeCall({ operation: query.operation }, timeoutInMs, options, async (abortSignal) => {
    const pages = client
      .listEntities<Record<string, unknown>>({
        abortSignal,
        queryOptions: { ...(query.filter ? { filter: query.filter } : {}), ...(query.select ? { select: query.select } : {}) },
      })
      .byPage({ maxPageSize, ...(continuationToken ? { continuationToken } : {}) });
    const first = await pages.next();
    if (first.done) return { entities: [], next: undefined };
    return { entities: [...first.value], next: first.value.continuationToken };
  });
}

/**
 * A page of up to `limit` mapped items in the service's key order, paged by the service. Entities
 * the mapper drops (null) do not count, so the page is topped up with further requests, each
 * asking for no more than is still missing: the service's continuation is then exact.
 */
export async function tablePage<T>(
  client: TableClient,
  query: TableQuery,
  limit: number,
  token: string | undefined,
  map: (entity: TableEntityResult<Record<string, unknown>>) => T | null,
  timeoutInMs: number,
  options: CallOptions | undefined,
): Promise<{ items: T[]; continuationToken: string | null }> {
  const items: T[] = [];
  const cursor = decodeCursor(token, 'table');
  let next = cursor?.kind === 'table' ? cursor.token : undefined;
  do {
    const page = await fetchPage(client, query, Math.min(TABLE_MAX_PAGE_SIZE, limit - items.length), next, timeoutInMs, options);
    for (const entity of page.entities) {
      const item = map(entity);
      if (item !== null) items.push(item);
    }
    next = page.next;
  } while (next !== undefined && items.length < limit);
  return { items, continuationToken: next === undefined ? null : encodeCursor({ kind: 'table', token: next }) };
}

/** Every entity matching the query, 1 000 per request. */
export async function tableScan(
  client: TableClient,
  query: TableQuery,
  timeoutInMs: number,
  options: CallOptions | undefined,
): Promise<TableEntityResult<Record<string, unknown>>[]> {
  const all: TableEntityResult<Record<string, unknown>>[] = [];
  let next: string | undefined;
  do {
    const page = await fetchPage(client, query, TABLE_MAX_PAGE_SIZE, next, timeoutInMs, options);
    all.push(...page.entities);
    next = page.next;
  } while (next !== undefined);
  return all;
}

/** A page of a list already in memory, by offset. */
export function offsetPage<T>(
  all: readonly T[],
  limit: number,
  token: string | undefined,
): { items: T[]; continuationToken: string | null } {
  const cursor = decodeCursor(token, 'offset');
  const offset = cursor?.kind === 'offset' ? cursor.offset : 0;
  const end = offset + limit;
  return { items: all.slice(offset, end), continuationToken: end < all.length ? encodeCursor({ kind: 'offset', offset: end }) : null };
}
