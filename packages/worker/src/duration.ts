import { JobqError } from '@jobq/ports';

/** How long a stopped task gets between SIGTERM and SIGKILL unless `JOBQ_KILL_TIMEOUT` says otherwise (docs/design.md#cancellation-on-the-worker). */
export const DEFAULT_KILL_TIMEOUT_IN_MS = 600_000;

/** Parses a duration (docs/design.md#the-worker-loop): a bare number is seconds; suffixes `ms`, `s`, `m`, `h`. `name` is for the error. */
export function parseDurationInMs(text: string, name: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/i.exec(text.trim());
  if (!match) throw new JobqError('invalid-config', `${name} must be a duration (a number of seconds, or with ms, s, m or h, e.g. 600, 30s, 10m), got "${text}"`);
  const unit = (match[2] ?? 's').toLowerCase();
  const factor = unit === 'ms' ? 1 : unit === 's' ? 1_000 : unit === 'm' ? 60_000 : 3_600_000;
  const ms = Math.round(Number(match[1]) * factor);
  // Any length works (timers are chained past setTimeout's 24.8-day limit), but not beyond what a number holds exactly.
  if (!Number.isSafeInteger(ms)) throw new JobqError('invalid-config', `${name} is too long, got "${text}"`);
  return ms;
}
