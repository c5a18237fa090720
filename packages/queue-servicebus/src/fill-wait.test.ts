import { describe, expect, it } from '@jest/globals';
import { FillWait } from './fill-wait';

describe('the batch fill wait', () => {
  it('is the ceiling until a round trip has been measured', () => {
    const fill = new FillWait({ ceilingInMs: 50 });
    expect(fill.waitInMs).toBe(50);
    expect(fill.roundTripInMs).toBeUndefined();
    fill.observe(Number.NaN);
    fill.observe(-1);
    fill.observe(Number.POSITIVE_INFINITY);
    expect(fill.waitInMs).toBe(50);
  });

  it('follows a fast link down to the floor', () => {
    const fill = new FillWait({ ceilingInMs: 50 });
    fill.observe(1);
    expect(fill.waitInMs).toBe(5);
    for (let i = 0; i < 50; i++) fill.observe(0.5);
    expect(fill.waitInMs).toBe(5);
    expect(fill.roundTripInMs).toBeLessThan(1);
  });

  it('waits two round trips and a margin in between', () => {
    const fill = new FillWait({ ceilingInMs: 50 });
    fill.observe(10);
    expect(fill.waitInMs).toBe(22);
  });

  it('smooths single measurements and rises again when round trips grow', () => {
    const fill = new FillWait({ ceilingInMs: 50 });
    for (let i = 0; i < 20; i++) fill.observe(1);
    expect(fill.waitInMs).toBe(5);
    fill.observe(15);
    const afterOne = fill.waitInMs;
    expect(afterOne).toBeGreaterThan(5);
    expect(afterOne).toBeLessThan(32);
    for (let i = 0; i < 40; i++) fill.observe(15);
    expect(fill.waitInMs).toBe(32);
  });

  it('is never above the ceiling, and one stall is soon forgotten', () => {
    const fill = new FillWait({ ceilingInMs: 50 });
    for (let i = 0; i < 20; i++) fill.observe(1);
    fill.observe(60_000);
    expect(fill.waitInMs).toBeLessThanOrEqual(50);
    for (let i = 0; i < 20; i++) {
      fill.observe(1);
      expect(fill.waitInMs).toBeLessThanOrEqual(50);
    }
    expect(fill.waitInMs).toBe(5);
    for (let i = 0; i < 20; i++) fill.observe(1_000);
    expect(fill.waitInMs).toBe(50);
  });

  it('keeps the floor at or below the ceiling, and a ceiling of 0 waits 0', () => {
    expect(new FillWait({ ceilingInMs: 3 }).waitInMs).toBe(3);
    const low = new FillWait({ ceilingInMs: 3 });
    low.observe(0);
    expect(low.waitInMs).toBe(3);
    const none = new FillWait({ ceilingInMs: 0 });
    none.observe(5);
    expect(none.waitInMs).toBe(0);
  });
});
