import { describe, expect, it } from '@jest/globals';
import { isNewer, pendingRequests } from './time';

describe('isNewer (one rule of timestamp precedence)', () => {
  it('compares dates, not their spelling', () => {
    expect(isNewer('2026-01-01T00:00:01Z', '2026-01-01T00:00:00.500Z')).toBe(true);
    expect(isNewer('2026-01-01T00:00:00.500Z', '2026-01-01T00:00:01Z')).toBe(false);
    expect(isNewer('2026-01-01T00:00:01Z', '2026-01-01T00:00:01.000Z')).toBe(false);
  });

  it('takes a missing a as never newer and a missing b as the beginning of time', () => {
    expect(isNewer(null, null)).toBe(false);
    expect(isNewer(null, '2026-01-01T00:00:00Z')).toBe(false);
    expect(isNewer('2026-01-01T00:00:00Z', null)).toBe(true);
  });

  it('compares the text when either does not parse', () => {
    expect(isNewer('not a date', '2026-01-01T00:00:00Z')).toBe(true);
    expect(isNewer('2026-01-01T00:00:00Z', 'not a date')).toBe(false);
  });
});

describe('pendingRequests', () => {
  const none = { cancelRequestedAt: null, cancelAppliedAt: null, retryRequestedAt: null, retryAppliedAt: null };

  it('is a cancel newer than the applied one and than the last retry request', () => {
    expect(pendingRequests(none)).toEqual({ cancel: false, retry: false });
    expect(pendingRequests({ ...none, cancelRequestedAt: '2026-01-01T00:00:02Z' })).toEqual({ cancel: true, retry: false });
    expect(pendingRequests({ ...none, cancelRequestedAt: '2026-01-01T00:00:02Z', cancelAppliedAt: '2026-01-01T00:00:02Z' }).cancel).toBe(
      false,
    );
    // A later retry request overtakes the cancel.
    expect(pendingRequests({ ...none, cancelRequestedAt: '2026-01-01T00:00:02Z', retryRequestedAt: '2026-01-01T00:00:03Z' })).toEqual({
      cancel: false,
      retry: true,
    });
    expect(pendingRequests({ ...none, retryRequestedAt: '2026-01-01T00:00:03Z', retryAppliedAt: '2026-01-01T00:00:03Z' }).retry).toBe(
      false,
    );
  });
});
