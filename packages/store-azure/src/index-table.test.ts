import { describe, expect, it } from '@jest/globals';
import { MAX_ROW_ERROR_CHARS, compareTimes, indexStatus, shortenError } from './index-table';
import { decodeCursor, encodeCursor, offsetPage } from './workflow-paging';

describe('indexStatus', () => {
  const row = (extra: Record<string, string>) => ({ status: 'failed', ...extra });

  it('is the saved status without requests, and null for a row no save wrote', () => {
    expect(indexStatus(row({}))).toBe('failed');
    expect(indexStatus({ cancel_requested_at: '2026-01-01T00:00:00.000Z' })).toBeNull();
  });

  it('shows pending while a retry request is newer than the last applied one', () => {
    expect(indexStatus(row({ retry_requested_at: '2026-01-01T00:00:10.000Z' }))).toBe('pending');
    expect(indexStatus(row({ retry_requested_at: '2026-01-01T00:00:10.000Z', retry_applied_at: '2026-01-01T00:00:05.000Z' }))).toBe(
      'pending',
    );
    expect(indexStatus(row({ retry_requested_at: '2026-01-01T00:00:10.000Z', retry_applied_at: '2026-01-01T00:00:10.000Z' }))).toBe(
      'failed',
    );
  });

  it('does not show pending when a newer cancel request overtook the retry', () => {
    expect(indexStatus(row({ retry_requested_at: '2026-01-01T00:00:10.000Z', cancel_requested_at: '2026-01-01T00:00:11.000Z' }))).toBe(
      'failed',
    );
    expect(indexStatus(row({ retry_requested_at: '2026-01-01T00:00:10.000Z', cancel_requested_at: '2026-01-01T00:00:09.000Z' }))).toBe(
      'pending',
    );
  });
});

describe('row helpers', () => {
  it('compares timestamps as instants, whatever their precision', () => {
    expect(compareTimes('2026-01-01T00:00:01Z', '2026-01-01T00:00:00.999Z')).toBeGreaterThan(0);
    expect(compareTimes('2026-01-01T00:00:01Z', '2026-01-01T00:00:01.000Z')).not.toBe(0); // equal instants: text order, stable
  });

  it('keeps short errors and cuts long ones', () => {
    expect(shortenError(null)).toBe('');
    expect(shortenError('boom')).toBe('boom');
    const long = shortenError('x'.repeat(10_000));
    expect(long).toHaveLength(MAX_ROW_ERROR_CHARS);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('page cursors', () => {
  it('round-trip and refuse a cursor of the other kind or garbage', () => {
    const table = encodeCursor({ kind: 'table', token: 'abc' });
    expect(decodeCursor(table, 'table')).toEqual({ kind: 'table', token: 'abc' });
    expect(() => decodeCursor(table, 'offset')).toThrow('continuation token');
    expect(() => decodeCursor('%%%', 'table')).toThrow('continuation token');
    expect(decodeCursor(undefined, 'offset')).toBeUndefined();
  });

  it('pages a list by offset', () => {
    const first = offsetPage([1, 2, 3, 4, 5], 2, undefined);
    expect(first.items).toEqual([1, 2]);
    const second = offsetPage([1, 2, 3, 4, 5], 2, first.continuationToken ?? undefined);
    expect(second.items).toEqual([3, 4]);
    const last = offsetPage([1, 2, 3, 4, 5], 2, second.continuationToken ?? undefined);
    expect(last).toEqual({ items: [5], continuationToken: null });
  });
});
