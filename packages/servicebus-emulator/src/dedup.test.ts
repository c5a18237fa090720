import { describe, expect, it } from '@jest/globals';
import { Queue } from './queue';
import { PROFILE_DEFAULTS } from './profile';
import { fakeClock } from './test-helpers/clock';

describe('duplicate detection', () => {
  it('a message the queue refused for room is not remembered: sent again with the same id, it is taken', () => {
    // The broker checks a transfer's room before it enqueues, so the SDK cannot reach this; the queue itself must not record the id either.
    let sequence = 0;
    const queue = new Queue(
      'full',
      { ...PROFILE_DEFAULTS.azure, requiresDuplicateDetection: true, maxSizeInMegabytes: 1 },
      Date.now,
      () => ++sequence,
    );
    queue.enqueue({ message_id: 'fill', body: 'x' }, 1_000_000);
    expect(() => queue.enqueue({ message_id: 'late', body: 'x' }, 100_000)).toThrow(/is full/);
    queue.main.clear();
    expect(queue.enqueue({ message_id: 'late', body: 'x' }, 100_000)).toMatchObject({ duplicate: false, sequenceNumber: 2 });
    expect(queue.stats.dedupDrops).toBe(0);
  });

  it('past 10 000 ids inside the window, a send looks at a bounded number of remembered ids', () => {
    const clock = fakeClock();
    let sequence = 0;
    const queue = new Queue(
      'many',
      {
        ...PROFILE_DEFAULTS.azure,
        requiresDuplicateDetection: true,
        duplicateDetectionHistoryTimeWindowMs: 60_000,
        maxSizeInMegabytes: 81_920,
      },
      clock.now,
      () => ++sequence,
    );
    const seen = (queue as unknown as { seen: Map<string, number> }).seen;
    let visited = 0;
    const entries = seen[Symbol.iterator].bind(seen);
    (seen as unknown as { [Symbol.iterator]: () => Iterator<[string, number]> })[Symbol.iterator] = function* () {
      for (const entry of entries()) {
        visited++;
        yield entry;
      }
    };
    for (let i = 0; i < 10_500; i++) queue.enqueue({ message_id: `id-${i}`, body: 'x' }, 1);
    visited = 0;
    for (let i = 10_500; i < 11_500; i++) queue.enqueue({ message_id: `id-${i}`, body: 'x' }, 1);
    expect(visited).toBeLessThanOrEqual(1_000);
    expect(queue.enqueue({ message_id: 'id-0', body: 'x' }, 1).duplicate).toBe(true);

    // Out of the window: every old id is forgotten, and a re-sent id counts from its new time.
    clock.advance(60_001);
    expect(queue.enqueue({ message_id: 'id-0', body: 'x' }, 1).duplicate).toBe(false);
    expect(seen.size).toBe(1);
    clock.advance(30_000);
    queue.enqueue({ message_id: 'other', body: 'x' }, 1);
    clock.advance(30_001);
    expect(queue.enqueue({ message_id: 'other', body: 'x' }, 1).duplicate).toBe(true);
    expect(seen.size).toBe(1);
  });
});
