import { describe, expect, it } from '@jest/globals';
import { useMemoryStacks } from './test-helpers/memory-stack';
import { WrappedQueue } from './test-helpers/wrappers';

// The coordinator's receive wait policy, on the in-memory adapters and a virtual clock: after a
// batch of one message the next receive goes out at once (a chain's next completion is not held
// back by the batch-fill wait); after a larger partial batch it waits for more to gather.

const stacks = useMemoryStacks();

interface ReceiveCall {
  at: number;
  got: number;
}

function recording(calls: ReceiveCall[], now: () => number) {
  return (queue: import('@jobq/ports').TaskQueue) =>
    new WrappedQueue(queue, {
      receive: async (_options, receive) => {
        const call: ReceiveCall = { at: now(), got: -1 };
        calls.push(call);
        const messages = await receive();
        call.got = messages.length;
        return messages;
      },
    });
}

const oneTask = (name: string) => ({ name, tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] });

describe('Coordinator receive wait (in memory, virtual time)', () => {
  it('after a batch of one message, receives again at once, without the batch-fill wait', async () => {
    const calls: ReceiveCall[] = [];
    let now = () => 0;
    const s = await stacks.open({
      start: false,
      coordinator: { batchFillWaitInMs: 50 },
      coordinatorCompletions: recording(calls, () => now()),
    });
    now = () => s.clock.now();
    await s.worker.stop();
    await s.submit(oneTask('single'));
    await s.coordinator.start();
    await s.until(() => calls.some((c, i) => c.got === 1 && calls[i + 1] !== undefined));
    const i = calls.findIndex((c) => c.got === 1);
    // The batch took no virtual time to apply: the next receive starts at the moment the batch came.
    expect(calls[i + 1]?.at).toBe(calls[i]?.at);
  });

  it('after a partial batch of several messages, waits until batchFillWaitInMs after the last receive', async () => {
    const calls: ReceiveCall[] = [];
    let now = () => 0;
    const s = await stacks.open({
      start: false,
      coordinator: { batchFillWaitInMs: 50 },
      coordinatorCompletions: recording(calls, () => now()),
    });
    now = () => s.clock.now();
    await s.worker.stop();
    await s.submit(oneTask('first'));
    await s.submit(oneTask('second'));
    await s.coordinator.start();
    await s.until(() => calls.some((c, i) => c.got === 2 && calls[i + 1] !== undefined));
    const i = calls.findIndex((c) => c.got === 2);
    expect(calls[i + 1]?.at).toBe((calls[i]?.at ?? 0) + 50);
  });

  it('batchFillMinMessages moves the threshold: with 3, a batch of two messages is followed at once', async () => {
    const calls: ReceiveCall[] = [];
    let now = () => 0;
    const s = await stacks.open({
      start: false,
      coordinator: { batchFillWaitInMs: 50, batchFillMinMessages: 3 },
      coordinatorCompletions: recording(calls, () => now()),
    });
    now = () => s.clock.now();
    await s.worker.stop();
    await s.submit(oneTask('first'));
    await s.submit(oneTask('second'));
    await s.coordinator.start();
    await s.until(() => calls.some((c, i) => c.got === 2 && calls[i + 1] !== undefined));
    const i = calls.findIndex((c) => c.got === 2);
    expect(calls[i + 1]?.at).toBe(calls[i]?.at);
  });
});
