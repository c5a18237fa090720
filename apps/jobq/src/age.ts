import { UsageError } from './errors';

/** Milliseconds per unit of an age: `ms`, `s`, `m`, `h`, `d` (days), `w` (weeks); a bare number is seconds. */
const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

const AGE = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?$/i;

/**
 * An age such as `30d`, `12h`, `90m`, `2w` or `3600` (seconds) in ms; a malformed one is a usage
 * error naming `flag`.
 */
export function parseAgeInMs(text: string, flag: string): number {
  const match = AGE.exec(text.trim());
  if (!match) throw new UsageError(`${flag} must be a duration (a number of seconds, or with ms, s, m, h, d or w, e.g. 30d, 12h), got "${text}"`);
  const ms = Math.round(Number(match[1]) * (UNITS[(match[2] ?? 's').toLowerCase()] ?? 1_000));
  if (!Number.isSafeInteger(ms)) throw new UsageError(`${flag} is too long, got "${text}"`);
  return ms;
}

/** `30d`, `5h`, `90s`: the largest whole unit of a duration. */
export function formatAge(ms: number): string {
  for (const [unit, size] of [['w', UNITS.w!], ['d', UNITS.d!], ['h', UNITS.h!], ['m', UNITS.m!], ['s', UNITS.s!]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * A cutoff time from `--finished-before`: a duration (`30d`: that long before `now`) or a date or
 * time (`2026-01-31`, `2026-01-31T12:00:00Z`; a date alone is midnight UTC). A time in the future
 * is refused (use `0` for "every finished workflow").
 */
export function parseCutoff(text: string, flag: string, now: Date): { cutoff: string; age: string | null } {
  const trimmed = text.trim();
  if (AGE.test(trimmed)) return { cutoff: new Date(now.getTime() - parseAgeInMs(trimmed, flag)).toISOString(), age: formatAge(parseAgeInMs(trimmed, flag)) };
  const ms = /^\d{4}-\d{2}-\d{2}([T ].*)?$/.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new UsageError(`${flag} must be a duration (30d, 12h, 3600) or a date (2026-01-31, 2026-01-31T12:00:00Z), got "${text}"`);
  }
  if (ms > now.getTime()) throw new UsageError(`${flag} ${trimmed} is in the future (use ${flag} 0 for every finished workflow)`);
  return { cutoff: new Date(ms).toISOString(), age: null };
}
