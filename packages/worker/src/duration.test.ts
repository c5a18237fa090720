import { parseDurationInMs } from './duration';

describe('parseDurationInMs', () => {
  it('reads seconds and the ms, s, m, h suffixes, including durations past 24.8 days', () => {
    expect(['600', '500ms', '30s', '10m', '2h', '1.5'].map((t) => parseDurationInMs(t, 'X'))).toEqual([600_000, 500, 30_000, 600_000, 7_200_000, 1_500]);
    expect(parseDurationInMs('720h', 'JOBQ_KILL_TIMEOUT')).toBe(30 * 24 * 3600 * 1000);
  });

  it('refuses text that is not a duration, and one too long for a number to hold', () => {
    expect(() => parseDurationInMs('soon', 'JOBQ_KILL_TIMEOUT')).toThrow(/JOBQ_KILL_TIMEOUT must be a duration/);
    expect(() => parseDurationInMs('9'.repeat(400), 'JOBQ_KILL_TIMEOUT')).toThrow(/JOBQ_KILL_TIMEOUT is too long/);
  });
});
