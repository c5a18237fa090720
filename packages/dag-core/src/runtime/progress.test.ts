import { describe, expect, it } from '@jest/globals';
import { RateWindow } from './progress';

describe('RateWindow', () => {
  it('gives finished tasks per second over the window and the time left at that rate', () => {
    const rate = new RateWindow(10_000);
    expect(rate.rate()).toBeNull();
    rate.add(0, 0);
    rate.add(2_000, 4);
    expect(rate.rate()).toBe(2);
    expect(rate.etaMs(6)).toBe(3_000);
    expect(rate.etaMs(0)).toBe(0);
    rate.add(20_000, 4);
    rate.add(22_000, 4);
    expect(rate.rate()).toBe(0);
    expect(rate.etaMs(6)).toBeNull();
  });

  it('keeps one sample per time: a second reading at the same moment replaces the first', () => {
    const rate = new RateWindow(10_000);
    rate.add(0, 0);
    rate.add(1_000, 1);
    rate.add(1_000, 3);
    expect(rate.rate()).toBe(3);
  });
});
