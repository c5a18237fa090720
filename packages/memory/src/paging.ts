import { JobqError } from '@jobq/ports';

/**
 * Continuation tokens of the memory store's listings: opaque (base64url JSON) and checked, so a
 * token from another listing, or garbage, is `invalid-argument` as with the Azure store.
 */
export type Cursor = { kind: 'offset'; offset: number } | { kind: 'after'; key: readonly string[] };

export function encodeCursor(cursor: Cursor): string {
  const json = cursor.kind === 'offset' ? { m: 1, o: cursor.offset } : { m: 1, a: cursor.key };
  return Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
}

export function decodeCursor(token: string | undefined, kind: 'offset', size?: number): { kind: 'offset'; offset: number } | undefined;
export function decodeCursor(token: string | undefined, kind: 'after', size: number): { kind: 'after'; key: readonly string[] } | undefined;
export function decodeCursor(token: string | undefined, kind: Cursor['kind'], size = 0): Cursor | undefined {
  if (token === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    json = undefined;
  }
  const j = (typeof json === 'object' && json !== null ? json : {}) as { m?: unknown; o?: unknown; a?: unknown };
  if (j.m === 1 && kind === 'offset' && typeof j.o === 'number' && Number.isSafeInteger(j.o) && j.o >= 0) return { kind, offset: j.o };
  if (j.m === 1 && kind === 'after' && Array.isArray(j.a) && j.a.length === size && j.a.every((k) => typeof k === 'string'))
    return { kind, key: j.a };
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

/** The first index of sorted `items` whose key is greater than `key` (`orEqual`: not less than it). */
export function firstAfter<T>(items: readonly T[], key: string, keyOf: (item: T) => string, orEqual = false): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const k = keyOf(items[mid]!);
    if (k < key || (!orEqual && k === key)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
