import { formatDuration, formatElapsed, isDurationText, parseDurationInMs } from './duration';

describe('parseDurationInMs', () => {
  it('reads seconds and the ms, s, m, h suffixes, including durations past 24.8 days', () => {
    expect(['600', '500ms', '30s', '10m', '2h', '1.5'].map((t) => parseDurationInMs(t, 'X'))).toEqual([
      600_000, 500, 30_000, 600_000, 7_200_000, 1_500,
    ]);
    expect(parseDurationInMs('720h', 'JOBQ_KILL_TIMEOUT')).toBe(30 * 24 * 3600 * 1000);
  });

  it('reads days and weeks, any case, with spaces around', () => {
    expect([' 30d ', '2W', '1 h', '0'].map((t) => parseDurationInMs(t, 'X'))).toEqual([30 * 86_400_000, 14 * 86_400_000, 3_600_000, 0]);
  });

  it('refuses text that is not a duration, and one too long for a number to hold', () => {
    expect(() => parseDurationInMs('soon', 'JOBQ_KILL_TIMEOUT')).toThrow(/JOBQ_KILL_TIMEOUT must be a duration/);
    expect(() => parseDurationInMs('-5s', '--wait')).toThrow(/--wait must be a duration .*got "-5s"/);
    expect(() => parseDurationInMs('9'.repeat(400), 'JOBQ_KILL_TIMEOUT')).toThrow(/JOBQ_KILL_TIMEOUT is too long/);
    expect(isDurationText('10m')).toBe(true);
    expect(isDurationText('2026-01-31')).toBe(false);
  });
});

describe('formatDuration', () => {
  it('writes the largest unit that divides the duration, and reads back', () => {
    const shown = [250, 90_000, 3_600_000, 86_400_000 * 30, 7 * 86_400_000, 1_500].map(formatDuration);
    expect(shown).toEqual(['250ms', '90s', '1h', '30d', '1w', '1500ms']);
    expect(shown.map((t) => parseDurationInMs(t, 'X'))).toEqual([250, 90_000, 3_600_000, 86_400_000 * 30, 7 * 86_400_000, 1_500]);
  });
});

describe('formatElapsed', () => {
  it('shows seconds below 2 minutes, minutes below 2 hours, then hours and two-digit minutes (rounded down)', () => {
    expect(
      [0, -5, 45_400, 119_000, 179_999, 7_199_000, 7_200_000, 3 * 3_600_000 + 5 * 60_000 + 59_000].map((ms) => formatElapsed(ms)),
    ).toEqual(['0s', '0s', '45s', '119s', '3m', '119m', '2h00m', '3h05m']);
  });

  it('with seconds, shows seconds below a minute, minutes and two-digit seconds below an hour, then hours and minutes', () => {
    const shown = [0, -5, 999, 59_400, 65_000, 3_599_000, 3_600_000, 7_800_000].map((ms) => formatElapsed(ms, { seconds: true }));
    expect(shown).toEqual(['0s', '0s', '1s', '59s', '1m05s', '59m59s', '1h00m', '2h10m']);
  });
});
