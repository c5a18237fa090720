import { describe, expect, it } from '@jest/globals';
import { Limit } from './limit';

describe('Limit', () => {
  it('runs at most n calls at once, the rest in the order they came, and passes results and errors through', async () => {
    const limit = new Limit(2);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const gates: Array<() => void> = [];
    const calls = [0, 1, 2, 3, 4].map((i) =>
      limit.run(async () => {
        started.push(i);
        peak = Math.max(peak, ++running);
        await new Promise<void>((resolve) => gates.push(resolve));
        running--;
        if (i === 3) throw new Error('three');
        return i * 10;
      }),
    );
    const settled = Promise.allSettled(calls);
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    // Freeing the second slot first lets the next in line (2) start, not a later one.
    gates[1]!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    while (started.length < 5 || gates.length > 0) {
      gates.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const results = await settled;
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([0, 10, 20, 'three', 40]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(peak).toBe(2);
  });
});
