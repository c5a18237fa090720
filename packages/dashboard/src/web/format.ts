/** Text the pages show: durations, rates and shell lines, the same forms as the CLI prints. */

/**
 * `45s`, `3m05s`, `2h10m` (as `jobq workflow watch`): `formatElapsed(ms, { seconds: true })` of `@jobq/ports`, written
 * again because the browser bundle imports no workspace package (format.test.ts checks that the two agree).
 */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** `0.50/s`, `2.0/min` when slow, `-` when unknown. */
export function rateText(rate: number | null | undefined): string {
  if (rate === null || rate === undefined) return '-';
  if (rate > 0 && rate < 0.1) return `${(rate * 60).toFixed(1)}/min`;
  return `${rate.toFixed(2)}/s`;
}

/** A time of day from an ISO string, or `-`. */
export function timeText(iso: string | null | undefined): string {
  if (!iso) return '-';
  const at = new Date(iso);
  return Number.isNaN(at.getTime())
    ? iso
    : at
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');
}

/** A word quoted for a POSIX shell when it needs it (task names may hold anything). */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A byte count as `812 B`, `64.0 KiB`, `1.5 MiB`. */
export function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The message of anything thrown, for the pages' error lines: an `Error`'s message (its name when empty), anything else as text. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === 'string' ? err : String(err);
}
