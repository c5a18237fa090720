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
