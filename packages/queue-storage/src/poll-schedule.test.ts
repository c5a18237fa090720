import { describe, expect, it } from '@jest/globals';
import { PollSchedule } from './poll-schedule';

/** The times of the polls of one receive that waits `waitInMs` on an empty queue, starting at `start`. */
function polls(schedule: PollSchedule, start: number, waitInMs: number): number[] {
  const at = [start];
  for (let t = start; ;) {
    const left = start + waitInMs - t;
    if (left <= 0) return at;
    t += Math.min(schedule.nextPause(t), left);
    at.push(t);
  }
}

describe('PollSchedule', () => {
  it('polls every min interval within the hot window after a message, then doubles up to the max', () => {
    const s = new PollSchedule(10, 1_000, 100);
    s.onMessages(0);
    const at = polls(s, 0, 3_000);
    expect(at.slice(0, 11)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    const gaps = at
      .slice(10)
      .map((t, i) => (at[i + 11] ?? t) - t)
      .slice(0, -1);
    expect(gaps.slice(0, 8)).toEqual([10, 20, 40, 80, 160, 320, 640, 1_000]);
  });

  it('keeps its back-off across receive calls: an idle queue costs about one poll per max interval, not a fresh fast start per call', () => {
    const s = new PollSchedule(10, 1_000, 1_000);
    s.onMessages(0);
    let t = 0;
    let count = 0;
    // 10 minutes of 1 s receives on an empty queue.
    for (let i = 0; i < 600; i++) {
      count += polls(s, t, 1_000).length;
      t += 1_000;
    }
    // The first seconds poll fast; after that two polls per receive (its start and its end).
    expect(count).toBeLessThan(1_400);
    const late = polls(s, t, 1_000);
    expect(late).toEqual([t, t + 1_000]);
  });

  it('is fast again as soon as messages arrive', () => {
    const s = new PollSchedule(10, 1_000, 1_000);
    polls(s, 0, 60_000);
    expect(s.nextPause(60_000)).toBe(1_000);
    s.onMessages(60_000);
    expect(s.nextPause(60_005)).toBe(10);
  });
});
