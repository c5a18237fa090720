import { describe, expect, it } from '@jest/globals';
import { VirtualClock, isJobqError } from '@jobq/ports';
import { describeTaskQueueContract } from '@jobq/ports/testing';
import { MemoryTaskQueue } from './task-queue';

describeTaskQueueContract(
  'in memory',
  () => {
    const queue = new MemoryTaskQueue({ name: 'contract', lockDurationInMs: 1_000, maxMessageBytes: 64 * 1024 });
    return Promise.resolve({ queue, dispose: () => queue.close() });
  },
  // On the real clock here; the delay on a virtual clock is checked below.
  { delayInMs: 1_500 },
);

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isJobqError(error) ? error.code : String(error);
  }
  return undefined;
}

describe('MemoryTaskQueue on a virtual clock', () => {
  it('holds a message for the lock duration of virtual time, redelivers it after, and honours renewals', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ lockDurationInMs: 30_000, clock });
    await queue.send({ body: 'a' });
    const [first] = await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 });
    expect(first!.lockedUntil.getTime()).toBe(clock.now() + 30_000);
    expect(queue.counts()).toEqual({ messages: 1, visible: 0, held: 1, delayed: 0 });
    await clock.advance(20_000);
    await queue.renewLock(first!);
    await clock.advance(20_000);
    expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 })).toEqual([]);
    await clock.advance(10_000);
    const [second] = await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 });
    expect(second).toMatchObject({ body: 'a', deliveryCount: 2 });
    expect(await codeOf(queue.complete(first!))).toBe('lock-lost');
    await queue.complete(second!);
    expect(queue.counts()).toEqual({ messages: 0, visible: 0, held: 0, delayed: 0 });
  });

  it('a waiting receive wakes when a message is sent, when a lock ends, or at the end of its wait, all in virtual time', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ lockDurationInMs: 5_000, clock });
    const start = clock.now();
    let got: string[] | undefined;
    void queue.receive({ maxMessages: 5, maxWaitTimeInMs: 60_000 }).then((m) => (got = m.map((x) => x.body)));
    await clock.advance(1_000);
    expect(got).toBeUndefined();
    await queue.send({ body: 'late' });
    await clock.settle();
    expect(got).toEqual(['late']);
    expect(clock.now()).toBe(start + 1_000);

    // The lock of "late" ends 5 s after it was taken: a receive waiting 60 s gets it then.
    let again: number | undefined;
    void queue.receive({ maxMessages: 5, maxWaitTimeInMs: 60_000 }).then(() => (again = clock.now()));
    await clock.advanceUntil(() => again !== undefined);
    expect(again).toBe(start + 6_000);

    let empty: number | undefined;
    void queue.receive({ maxMessages: 5, maxWaitTimeInMs: 2_500 }).then(() => (empty = clock.now()));
    await clock.advanceUntil(() => empty !== undefined);
    expect(empty).toBe(start + 8_500);
  });

  it('drops a message when its time to live runs out, held or not', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ lockDurationInMs: 60_000, clock });
    await queue.send([{ body: 'short', timeToLiveInMs: 10_000 }, { body: 'held', timeToLiveInMs: 10_000 }, { body: 'forever' }]);
    const [held] = await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 });
    expect(held?.body).toBe('short');
    await clock.advance(9_999);
    expect(await queue.approximateMessageCount()).toBe(3);
    await clock.advance(1);
    expect(await queue.approximateMessageCount()).toBe(1);
    expect(await codeOf(queue.complete(held!))).toBe('lock-lost');
    expect((await queue.peek(10)).map((m) => m.body)).toEqual(['forever']);
  });

  it('holds a delayed message back for its delay of virtual time; a waiting receive gets it when the delay ends', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ lockDurationInMs: 60_000, clock });
    const start = clock.now();
    await queue.send([
      { body: 'later', delayInMs: 30_000 },
      { body: 'now', delayInMs: 0 },
      { body: 'soon', delayInMs: 10_000 },
    ]);
    expect(queue.counts()).toEqual({ messages: 3, visible: 1, held: 0, delayed: 2 });
    expect(await queue.approximateMessageCount()).toBe(3);
    expect((await queue.peek(10)).map((m) => m.body)).toEqual(['now']);
    const [now] = await queue.receive({ maxMessages: 10, maxWaitTimeInMs: 0 });
    expect(now?.body).toBe('now');
    await clock.advance(9_999);
    expect(await queue.receive({ maxMessages: 10, maxWaitTimeInMs: 0 })).toEqual([]);
    await clock.advance(1);
    expect((await queue.receive({ maxMessages: 10, maxWaitTimeInMs: 0 })).map((m) => [m.body, m.deliveryCount])).toEqual([['soon', 1]]);

    let got: { body: string; at: number }[] | undefined;
    void queue.receive({ maxMessages: 10, maxWaitTimeInMs: 60_000 }).then((m) => (got = m.map((x) => ({ body: x.body, at: clock.now() }))));
    await clock.advanceUntil(() => got !== undefined);
    expect(got).toEqual([{ body: 'later', at: start + 30_000 }]);
    expect(queue.counts()).toEqual({ messages: 3, visible: 0, held: 3, delayed: 0 });
  });

  it('counts the time to live of a delayed message from the send, and refuses a delay it would not outlive', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ lockDurationInMs: 60_000, clock });
    await queue.send({ body: 'brief', delayInMs: 5_000, timeToLiveInMs: 8_000 });
    await clock.advance(5_000);
    expect((await queue.peek(10)).map((m) => m.body)).toEqual(['brief']);
    await clock.advance(3_000);
    expect(queue.counts()).toEqual({ messages: 0, visible: 0, held: 0, delayed: 0 });
    expect(await codeOf(queue.send({ body: 'x', delayInMs: 8_000, timeToLiveInMs: 8_000 }))).toBe('invalid-argument');
    expect(queue.counts().messages).toBe(0);
  });

  it('a receive stops waiting when its signal fires', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ clock });
    const controller = new AbortController();
    const pending = codeOf(queue.receive({ maxMessages: 1, maxWaitTimeInMs: 60_000, abortSignal: controller.signal }));
    await clock.settle();
    controller.abort();
    expect(await pending).toBe('aborted');
    expect(clock.pendingTimers).toBe(0);
  });

  it('costs the same per receive and complete with 200 000 messages waiting as with 10 000 (no scan per call)', async () => {
    const week = 7 * 24 * 3_600_000;
    const filled = async (total: number): Promise<MemoryTaskQueue> => {
      const queue = new MemoryTaskQueue({ lockDurationInMs: 60_000, clock: new VirtualClock() });
      for (let i = 0; i < total; i += 1_000)
        await queue.send(Array.from({ length: 1_000 }, (_, k) => ({ body: `{"n":${i + k}}`, timeToLiveInMs: week })));
      return queue;
    };
    /** Real time to receive, renew and complete 10 000 messages. */
    const drain = async (queue: MemoryTaskQueue): Promise<number> => {
      const started = process.hrtime.bigint();
      for (let n = 0; n < 10_000;) {
        const messages = await queue.receive({ maxMessages: Math.min(32, 10_000 - n), maxWaitTimeInMs: 0 });
        await Promise.all(messages.map((m) => queue.renewLock(m).then(() => queue.complete(m))));
        n += messages.length;
      }
      return Number(process.hrtime.bigint() - started);
    };
    const small = await filled(10_000);
    const big = await filled(200_000);
    await drain(small); // warm-up
    const times = { small: Infinity, big: Infinity };
    for (let round = 0; round < 2; round++) {
      await small.send(Array.from({ length: 10_000 }, (_, n) => ({ body: `{"again":${n}}` })));
      times.small = Math.min(times.small, await drain(small));
      times.big = Math.min(times.big, await drain(big));
    }
    // A scan of the waiting messages per call would make the big queue about 20 times slower.
    expect(times.big).toBeLessThan(times.small * 4);
    expect(small.counts()).toEqual({ messages: 0, visible: 0, held: 0, delayed: 0 });
    expect(big.counts()).toEqual({ messages: 180_000, visible: 180_000, held: 0, delayed: 0 });
  }, 60_000);
});
