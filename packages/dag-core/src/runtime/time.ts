/** Milliseconds since the epoch of an ISO-8601 timestamp, or NaN. Parsing a given string reads no clock. */
export function epochMs(timestamp: string): number {
  return Date.parse(timestamp);
}

/**
 * True when `a` is strictly later than `b`: the one rule of timestamp precedence (requests against
 * what was applied, a cancel against a retry). A missing `a` is never newer; a missing `b` counts as
 * the beginning of time. When either does not parse as a date, the strings are compared as they are
 * (ISO-8601 timestamps in one format order the same way).
 */
export function isNewer(a: string | null, b: string | null): boolean {
  if (a === null) return false;
  if (b === null) return true;
  const ta = epochMs(a);
  const tb = epochMs(b);
  if (Number.isNaN(ta) || Number.isNaN(tb)) return a > b;
  return ta > tb;
}

/** The request and applied times of a workflow's cancel and retry (the index row's, or a runtime's with its requests). */
export interface RequestTimes {
  cancelRequestedAt: string | null;
  cancelAppliedAt: string | null;
  retryRequestedAt: string | null;
  retryAppliedAt: string | null;
}

/** Which requests are recorded and not yet applied (docs/design.md#cancel-and-retry-requests). */
export interface PendingRequests {
  /** A cancel newer than the last applied one, and not overtaken by a later retry request. */
  cancel: boolean;
  /** A retry newer than the last applied one. */
  retry: boolean;
}

/** The requests of `times` the coordinator has not applied yet. */
export function pendingRequests(times: RequestTimes): PendingRequests {
  return {
    cancel: isNewer(times.cancelRequestedAt, times.cancelAppliedAt) && isNewer(times.cancelRequestedAt, times.retryRequestedAt),
    retry: isNewer(times.retryRequestedAt, times.retryAppliedAt),
  };
}

/** `timestamp` plus `ms`, as ISO-8601; null when the timestamp does not parse or the result is past the last date. */
export function addMs(timestamp: string, ms: number): string | null {
  const at = epochMs(timestamp) + ms;
  // ±8.64e15 ms is the range of a JavaScript date.
  return Number.isFinite(at) && Math.abs(at) <= 8.64e15 ? new Date(at).toISOString() : null;
}
