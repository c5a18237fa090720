import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError, type OutgoingMessage } from '@jobq/ports';
import { useMemoryStacks } from './test-helpers/memory-stack';
import { outcome, taskNameOf, WrappedQueue } from './test-helpers/wrappers';

// The dispatches of one flush go to each queue in one send(array) call; a send that fails midway
// (some messages out, then an error) keeps push-before-save: a transient failure saves nothing and
// the whole flush is pushed again on redelivery; a permanent one is retried message by message, so
// only the messages that really fail are reported as failed attempts.

const stacks = useMemoryStacks();
const terminal = (r: WorkflowRuntime) => isTerminalWorkflowStatus(r.status);
const fanOut = (name: string) => ({
  name,
  tasks: [
    { name: 'root', kwargs: { cmd: 'true' } },
    ...['c1', 'c2', 'c3', 'c4', 'c5'].map((c) => ({ name: c, depends_on: ['root'], kwargs: { cmd: 'true' } })),
  ],
});
const names = (messages: readonly OutgoingMessage[]) => messages.map((m) => taskNameOf(m.body) ?? '?');

describe('Dispatch batching (in memory, virtual time)', () => {
  it('sends the five children made ready by one completion in one send call', async () => {
    const sends: string[][] = [];
    const s = await stacks.open({
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: (messages, send) => {
            sends.push(names(messages));
            return send();
          },
        }),
    });
    const done = await s.run(fanOut('batched'));
    expect(done.status).toBe('completed');
    expect(sends).toEqual([['root'], ['c1', 'c2', 'c3', 'c4', 'c5']]);
  });

  it('a send that fails transiently after two of five messages: nothing is saved, the flush is pushed again whole, every child runs', async () => {
    let failed = 0;
    const s = await stacks.open({
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: async (messages, send) => {
            if (failed === 0 && messages.length === 5) {
              failed++;
              await queue.send(messages.slice(0, 2));
              throw new JobqError('unavailable', 'injected: the task queue went down midway');
            }
            return send();
          },
        }),
    });
    const workflowId = await s.submit(fanOut('partial-transient'));
    await s.until(() => failed === 1);
    const savedDuringOutage = (await s.store.load(workflowId))?.runtime;
    // The flush was not saved: no child is recorded as dispatched while three were never pushed.
    expect(['c1', 'c2', 'c3', 'c4', 'c5'].map((c) => savedDuringOutage?.tasks[c]?.status)).toEqual([
      'pending',
      'pending',
      'pending',
      'pending',
      'pending',
    ]);
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toMatchObject({
      c1: ['completed', 1],
      c2: ['completed', 1],
      c3: ['completed', 1],
      c4: ['completed', 1],
      c5: ['completed', 1],
    });
    // c1 and c2 went out twice (duplicates are harmless), the others once, after the redelivery.
    expect(Object.fromEntries(s.pushed)).toEqual({ root: 1, c1: 2, c2: 2, c3: 1, c4: 1, c5: 1 });
    expect(s.logs.some((line) => line.includes('(transient)'))).toBe(true);
  });

  it('a send that fails permanently midway is retried message by message: only the message that fails again is a failed attempt', async () => {
    let arrays = 0;
    const s = await stacks.open({
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: async (messages, send) => {
            if (messages.length === 5) {
              arrays++;
              await queue.send(messages.slice(0, 2));
              throw new JobqError('invalid-argument', 'injected: refused midway');
            }
            if (names(messages).includes('c4')) throw new JobqError('invalid-argument', 'injected: c4 is refused');
            return send();
          },
        }),
    });
    const done = await s.run(fanOut('partial-permanent'));
    expect(arrays).toBe(1);
    expect(done.status).toBe('failed');
    expect(outcome(done)).toMatchObject({
      root: ['completed', 1],
      c1: ['completed', 1],
      c2: ['completed', 1],
      c3: ['completed', 1],
      c4: ['failed', 1],
      c5: ['completed', 1],
    });
    expect(done.tasks.c4?.error).toMatch(/could not send the task message: injected: c4 is refused/);
    expect(Object.fromEntries(s.pushed)).toEqual({ root: 1, c1: 2, c2: 2, c3: 1, c5: 1 });
  });
});
