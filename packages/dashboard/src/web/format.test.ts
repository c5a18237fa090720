import { describe, expect, it } from '@jest/globals';
import { formatElapsed } from '@jobq/ports';
import { bytesText, duration, errorText, rateText, shellQuote, timeText } from './format';

describe('format', () => {
  it('prints durations and rates as the CLI does', () => {
    expect([duration(999), duration(65_000), duration(7_800_000)]).toEqual(['1s', '1m05s', '2h10m']);
    expect([rateText(null), rateText(0.05), rateText(2)]).toEqual(['-', '3.0/min', '2.00/s']);
  });

  it('writes durations exactly as formatElapsed with seconds does', () => {
    const samples = [-1, 0, 499, 500, 59_499, 59_500, 60_000, 3_599_499, 3_599_500, 3_600_000, 86_399_000, 400_000_000];
    expect(samples.map(duration)).toEqual(samples.map((ms) => formatElapsed(ms, { seconds: true })));
  });

  it('writes what a fetch threw as one text', () => {
    expect([errorText(new Error('HTTP 502')), errorText(new TypeError('')), errorText('gone'), errorText(7)]).toEqual([
      'HTTP 502',
      'TypeError',
      'gone',
      '7',
    ]);
  });

  it('quotes task names for a shell line only when needed', () => {
    expect(shellQuote('train-007')).toBe('train-007');
    expect(shellQuote("it's; rm -rf /")).toBe(`'it'\\''s; rm -rf /'`);
    expect(shellQuote('')).toBe("''");
  });

  it('prints times and sizes', () => {
    expect(timeText('2026-12-02T01:02:03.456Z')).toBe('2026-12-02 01:02:03Z');
    expect(timeText(null)).toBe('-');
    expect([bytesText(812), bytesText(65_536), bytesText(1_572_864)]).toEqual(['812 B', '64.0 KiB', '1.5 MiB']);
  });
});
