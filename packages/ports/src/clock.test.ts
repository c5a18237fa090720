import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { MAX_TIMEOUT_IN_MS, clockTimeout, realClock } from './clock';
import { VirtualClock } from './virtual-clock';

const DAY = 24 * 3_600_000;

describe('realClock', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('reads Date.now()', () => {
    jest.useFakeTimers({ now: Date.UTC(2030, 4, 6) });
    expect(realClock.now()).toBe(Date.UTC(2030, 4, 6));
  });

  it('sleeps past the setTimeout limit without firing early, and resolves early on abort', async () => {
    jest.useFakeTimers();
    let woke = false;
    void realClock.sleep(30 * DAY).then(() => (woke = true));
    await jest.advanceTimersByTimeAsync(MAX_TIMEOUT_IN_MS);
    expect(woke).toBe(false);
    await jest.advanceTimersByTimeAsync(30 * DAY - MAX_TIMEOUT_IN_MS);
    expect(woke).toBe(true);

    const controller = new AbortController();
    let aborted = false;
    void realClock.sleep(Number.POSITIVE_INFINITY, controller.signal).then(() => (aborted = true));
    await jest.advanceTimersByTimeAsync(100 * DAY);
    expect(aborted).toBe(false);
    controller.abort();
    await Promise.resolve();
    expect(aborted).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('resolves at once for 0, negative and NaN delays and for a fired signal', async () => {
    const controller = new AbortController();
    controller.abort();
    await Promise.all([realClock.sleep(0), realClock.sleep(-5), realClock.sleep(Number.NaN), realClock.sleep(60_000, controller.signal)]);
  });
});

describe('VirtualClock', () => {
  it('stands still until advanced, then wakes sleepers in time order (ties in order of sleeping)', async () => {
    const clock = new VirtualClock({ startMs: 1_000 });
    const woke: string[] = [];
    const at = (name: string) => () => woke.push(`${name}@${clock.now()}`);
    void clock.sleep(300).then(at('c'));
    void clock.sleep(100).then(at('a'));
    void clock.sleep(100).then(at('b'));
    expect(clock.pendingTimers).toBe(3);
    expect(clock.nextTimerAt()).toBe(1_100);
    await clock.advance(99);
    expect(woke).toEqual([]);
    expect(clock.now()).toBe(1_099);
    await clock.advance(1_000);
    expect(woke).toEqual(['a@1100', 'b@1100', 'c@1300']);
    expect(clock.now()).toBe(2_099);
    expect(clock.pendingTimers).toBe(0);
  });

  it('runs the timers a woken loop sets within the same advance, each at its own time', async () => {
    const clock = new VirtualClock({ startMs: 0 });
    const ticks: number[] = [];
    const stop = new AbortController();
    const loop = (async () => {
      while (!stop.signal.aborted) {
        await clock.sleep(250, stop.signal);
        if (!stop.signal.aborted) ticks.push(clock.now());
      }
    })();
    await clock.advance(1_000);
    expect(ticks).toEqual([250, 500, 750, 1_000]);
    stop.abort();
    await loop;
    expect(clock.pendingTimers).toBe(0);
  });

  it('resolves a sleeper early when its signal fires; Infinity waits for the signal only', async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let short = false;
    let forever = false;
    void clock.sleep(10_000, controller.signal).then(() => (short = true));
    void clock.sleep(Number.POSITIVE_INFINITY, controller.signal).then(() => (forever = true));
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(5_000);
    expect([short, forever]).toEqual([false, false]);
    controller.abort();
    await clock.settle();
    expect([short, forever]).toEqual([true, true]);
    expect(clock.pendingTimers).toBe(0);
    expect(clock.nextTimerAt()).toBeNull();
    await clock.sleep(0);
    await clock.sleep(5, controller.signal);
  });

  it('advanceUntil runs timers until the condition holds, and reports an idle loop or the limit', async () => {
    const clock = new VirtualClock({ startMs: 0 });
    let polls = 0;
    const stop = new AbortController();
    void (async () => {
      while (!stop.signal.aborted) {
        await clock.sleep(1_000, stop.signal);
        polls++;
      }
    })();
    expect(await clock.advanceUntil(() => polls >= 30)).toBe(true);
    expect(clock.now()).toBe(30_000);
    expect(await clock.advanceUntil(() => polls >= 1_000, { withinMs: 10_000, realWaitInMs: 20 })).toBe(false);
    expect(clock.now()).toBeLessThanOrEqual(40_000);
    stop.abort();
    expect(await clock.advanceUntil(() => false, { realWaitInMs: 20 })).toBe(false);
    await expect(
      clock.runUntil(
        () => false,
        () => 'nothing',
        { realWaitInMs: 20 },
      ),
    ).rejects.toThrow(/the condition never held .*: nothing/);
  });

  it('advanceUntil lets real work finish while no timer is waiting', async () => {
    const clock = new VirtualClock();
    let done = false;
    setTimeout(() => (done = true), 30);
    expect(await clock.advanceUntil(() => done)).toBe(true);
  });

  it('runUntilIdle runs every timer within the window', async () => {
    const clock = new VirtualClock({ startMs: 0 });
    const woke: number[] = [];
    for (const ms of [5, 50, 500, 5_000_000]) void clock.sleep(ms).then(() => woke.push(clock.now()));
    await clock.runUntilIdle(1_000);
    expect(woke).toEqual([5, 50, 500]);
    await clock.runUntilIdle();
    expect(woke).toEqual([5, 50, 500, 5_000_000]);
  });

  it("clockTimeout fires after the clock's time, follows its parent, and is cleared", async () => {
    const clock = new VirtualClock();
    const first = clockTimeout(clock, 500);
    await clock.advance(499);
    expect(first.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(first.signal.aborted).toBe(true);
    expect((first.signal.reason as DOMException).name).toBe('TimeoutError');

    const parent = new AbortController();
    const second = clockTimeout(clock, 500, parent.signal);
    parent.abort('stop');
    expect(second.signal.reason).toBe('stop');
    second.clear();

    const third = clockTimeout(clock, 500);
    third.clear();
    await clock.advance(1_000);
    expect(third.signal.aborted).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });
});
