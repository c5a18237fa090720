import { JobqError } from './errors';

/** Milliseconds per unit of a duration: `ms`, `s`, `m`, `h`, `d` (days), `w` (weeks). */
const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?$/i;

/** True when `text` is written in the duration grammar of {@link parseDurationInMs} (its size is not checked). */
export function isDurationText(text: string): boolean {
  return DURATION.test(text.trim());
}

/**
 * Parses a duration, the one grammar of every duration setting and flag (docs/cli.md#conventions): a
 * bare number is seconds; suffixes `ms`, `s`, `m`, `h`, `d`, `w` (`500ms`, `30s`, `10m`, `2h`, `30d`).
 * `name` (a flag, environment variable or key) is for the error, a `JobqError` `invalid-config`.
 */
export function parseDurationInMs(text: string, name: string): number {
  const match = DURATION.exec(text.trim());
  if (!match)
    throw new JobqError(
      'invalid-config',
      `${name} must be a duration (a number of seconds, or with ms, s, m, h, d or w, e.g. 600, 30s, 10m), got "${text}"`,
    );
  const ms = Math.round(Number(match[1]) * (UNITS[(match[2] ?? 's').toLowerCase()] ?? 1_000));
  // Any length works (timers are chained past setTimeout's 24.8-day limit), but not beyond what a number holds exactly.
  if (!Number.isSafeInteger(ms)) throw new JobqError('invalid-config', `${name} is too long, got "${text}"`);
  return ms;
}

/** `30d`, `5h`, `90s`, `250ms`: a duration in the largest unit that divides it (read back by {@link parseDurationInMs}). */
export function formatDuration(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm', 's'] as const) {
    const size = UNITS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** Options of {@link formatElapsed}. */
export interface ElapsedOptions {
  /** Keep the seconds below an hour (`3m05s`), for a clock that ticks (progress lines, ETAs); default false. */
  seconds?: boolean;
}

/**
 * An elapsed time or age for people, rounded to the second (negative counts as 0). By default roughly: `45s` below
 * 2 minutes, `12m` below 2 hours (whole minutes, rounded down), then `3h05m`. With `seconds`: `45s` below a minute,
 * `3m05s` below an hour, then `1h02m`. The one formatter of ages and durations shown to people (the CLI, its
 * reports and the dashboard, which repeats the `seconds` form because its browser code imports no package).
 */
export function formatElapsed(ms: number, options: ElapsedOptions = {}): string {
  const s = Math.max(0, Math.round(ms / 1000));
  // The rough form keeps a unit until 2 of the next; with seconds it moves on at 1.
  const switchAt = options.seconds === true ? 1 : 2;
  if (s < 60 * switchAt) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60 * switchAt) return options.seconds === true ? `${m}m${twoDigits(s % 60)}s` : `${m}m`;
  return `${Math.floor(m / 60)}h${twoDigits(m % 60)}m`;
}

function twoDigits(n: number): string {
  return String(n).padStart(2, '0');
}
