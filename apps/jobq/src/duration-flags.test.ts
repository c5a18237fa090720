import { describe, expect, it } from '@jest/globals';
import { durationMs, legacyDurationFlag, takeLegacyDurationFlags } from './duration-flags';
import { UsageError } from './errors';

describe('durationMs', () => {
  it('reads the one duration grammar: ms, s, m, h, d, w, a bare number of seconds', () => {
    expect(['500ms', '30s', '10m', '2h', '1d', '1w', '90', '0.5'].map((t) => durationMs(t, '--x'))).toEqual([
      500, 30_000, 600_000, 7_200_000, 86_400_000, 604_800_000, 90_000, 500,
    ]);
  });

  it('refuses a malformed or too short duration with a usage error naming the flag', () => {
    expect(() => durationMs('soon', '--stale-running')).toThrow(UsageError);
    expect(() => durationMs('soon', '--stale-running')).toThrow(/^--stale-running must be a duration .*got "soon"$/);
    expect(() => durationMs('500ms', '--stale-stats', 1_000)).toThrow('--stale-stats must be at least 1s, got "500ms"');
    expect(durationMs('1s', '--stale-stats', 1_000)).toBe(1_000);
  });
});

describe('old spellings of duration flags', () => {
  legacyDurationFlag('example-min', 'example', 'minutes');
  legacyDurationFlag('example-interval-s', 'example-interval', 'seconds', (ms) => ms / 1000);

  it('become their new flag, converted from their unit, with one warning line each naming the old unit', () => {
    const flags: Record<string, unknown> = { 'example-min': 90, 'example-interval-s': 0.5, other: 3 };
    expect(takeLegacyDurationFlags(flags)).toEqual([
      '--example-min (minutes) is deprecated and goes in the next minor version: use --example 90m',
      '--example-interval-s (seconds) is deprecated and goes in the next minor version: use --example-interval 0.5s',
    ]);
    expect(flags).toEqual({ example: '90m', 'example-interval': 0.5, other: 3 });
    expect(durationMs(flags.example as string, '--example')).toBe(90 * 60_000);
  });

  it('print nothing when only new spellings were given', () => {
    const flags: Record<string, unknown> = { example: '5m' };
    expect(takeLegacyDurationFlags(flags)).toEqual([]);
    expect(flags).toEqual({ example: '5m' });
  });
});
