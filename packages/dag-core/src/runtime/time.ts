/** Milliseconds since the epoch of an ISO-8601 timestamp, or NaN. Parsing a given string reads no clock. */
export function epochMs(timestamp: string): number {
  return Date.parse(timestamp);
}

/** True when `a` is strictly later than `b`; a missing `b` counts as the beginning of time. */
export function isNewer(a: string, b: string | null): boolean {
  if (b === null) return true;
  const ta = epochMs(a);
  const tb = epochMs(b);
  if (Number.isNaN(ta) || Number.isNaN(tb)) return a > b;
  return ta > tb;
}

/** `timestamp` plus `ms`, as ISO-8601; null when the timestamp does not parse or the result is past the last date. */
export function addMs(timestamp: string, ms: number): string | null {
  const at = epochMs(timestamp) + ms;
  // ±8.64e15 ms is the range of a JavaScript date.
  return Number.isFinite(at) && Math.abs(at) <= 8.64e15 ? new Date(at).toISOString() : null;
}
