import { formatDuration, isDurationText } from '@jobq/ports';
import { durationMs } from './duration-flags';
import { UsageError } from './errors';

/**
 * A cutoff time from `--finished-before`: a duration (`30d`: that long before `now`) or a date or
 * time (`2026-01-31`, `2026-01-31T12:00:00Z`; a date alone is midnight UTC). A time in the future
 * is refused (use `0` for "every finished workflow").
 */
export function parseCutoff(text: string, flag: string, now: Date): { cutoff: string; age: string | null } {
  const trimmed = text.trim();
  if (isDurationText(trimmed)) {
    const ms = durationMs(trimmed, flag);
    return { cutoff: new Date(now.getTime() - ms).toISOString(), age: formatDuration(ms) };
  }
  const ms = /^\d{4}-\d{2}-\d{2}([T ].*)?$/.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new UsageError(`${flag} must be a duration (30d, 12h, 3600) or a date (2026-01-31, 2026-01-31T12:00:00Z), got "${text}"`);
  }
  if (ms > now.getTime()) throw new UsageError(`${flag} ${trimmed} is in the future (use ${flag} 0 for every finished workflow)`);
  return { cutoff: new Date(ms).toISOString(), age: null };
}
