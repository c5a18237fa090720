import { describe, expect, it } from '@jest/globals';
import { JobqError, type WorkflowStore } from '@jobq/ports';
import { useMemoryStacks, type MemoryStack } from './test-helpers/memory-stack';
import { wrapStore, WrappedQueue } from './test-helpers/wrappers';

// Messages the coordinator cannot apply, on the in-memory adapters and a virtual clock (the
// redeliveries that count towards the bound come after lock expiries, in virtual time). Workflows
// whose runtime does not decode, and events the reducer cannot apply: corrupt.test.ts (Azurite).

const stacks = useMemoryStacks();

const SIMPLE = { name: 'simple', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] };

/** Bodies of the dead-letter queue of the completion queue. */
async function deadLetters(s: MemoryStack): Promise<string[]> {
  return (await s.completions.deadLetterQueue().peek(32)).map((m) => m.body);
}

describe('Coordinator: undeliverable messages (in memory, virtual time)', () => {
  it('a message that keeps failing for a reason other than an outage goes to the dead-letter queue after maxDeliveries; outages never count', async () => {
    let failWith: JobqError | null = null;
    const s = await stacks.open({
      start: false,
      completionLockInMs: 1_000,
      coordinator: { maxDeliveries: 3 },
      coordinatorStore: (store): WorkflowStore => ({
        ...wrapStore(store, null),
        getWorkflow: (id, options) => (failWith ? Promise.reject(failWith) : store.getWorkflow(id, options)),
      }),
    });
    // An outage: the wake-up is delivered again and again, and stays.
    const outage = await s.submit(SIMPLE, { id: 'wf-outage' });
    failWith = new JobqError('unavailable', 'read the index row failed: the storage service could not be reached');
    await s.coordinator.start();
    await s.until(
      () => s.logs.filter((l) => l.includes('wf-outage') && l.includes('could not be reached')).length >= 10,
      () => 'ten failed deliveries',
    );
    expect(await deadLetters(s)).toEqual([]);
    expect(s.coordinator.counters.deadLettered).toBe(0);
    // A permanent error: after 3 deliveries the message is dead-lettered with the reason.
    failWith = new JobqError('invalid-argument', 'read the index row failed: bad request (InvalidInput)');
    await s.until(
      async () => (await deadLetters(s)).length >= 1,
      () => 'a dead letter',
    );
    const [body] = await deadLetters(s);
    expect(body).toContain('wf-outage');
    expect(s.logs.join('\n')).toMatch(
      /moved to the dead-letter queue: delivered 3 times without being applied: processing workflow wf-outage failed: invalid-argument: read the index row failed: bad request/,
    );
    // Every message of the workflow in that batch (its wake-up, and the completion of the task the
    // request scan had started meanwhile) shares the fate.
    expect(s.coordinator.counters.deadLettered).toBe((await deadLetters(s)).length);
    failWith = null;
    expect(outage).toBe('wf-outage');
  });

  it('a workflow written by a newer jobq is left alone: never saved, never set aside, its messages stay however often they come back; the others run', async () => {
    let saves = 0;
    let deliveries = 0;
    const newer = new JobqError(
      'unsupported',
      'workflow "wf-newer" was written by a newer jobq (runtime format 3; this one reads up to 2): upgrade this process',
    );
    const s = await stacks.open({
      start: false,
      completionLockInMs: 1_000,
      coordinator: { maxDeliveries: 3 },
      coordinatorCompletions: (queue) =>
        new WrappedQueue(queue, {
          receive: async (_options, receive) => {
            const messages = await receive();
            deliveries += messages.filter((m) => m.body.includes('wf-newer')).length;
            return messages;
          },
        }),
      coordinatorStore: (store): WorkflowStore => {
        const wrapped = wrapStore(store, null);
        return {
          ...wrapped,
          load: (id, options) => (id === 'wf-newer' ? Promise.reject(newer) : store.load(id, options)),
          save: (runtime, etag, options) => {
            if (runtime.workflowId === 'wf-newer') saves++;
            return wrapped.save(runtime, etag, options);
          },
        };
      },
    });
    await s.submit(SIMPLE, { id: 'wf-newer' });
    await s.coordinator.start();
    const other = await s.run(SIMPLE, { id: 'wf-other' });
    expect(other.status).toBe('completed');
    await s.until(
      () => deliveries >= 8,
      () => `${deliveries} deliveries of the wake-up`,
    );
    expect(s.logs.some((l) => l.includes('workflow wf-newer failed: unsupported: workflow "wf-newer" was written by a newer jobq'))).toBe(
      true,
    );
    expect(await deadLetters(s)).toEqual([]);
    expect(s.coordinator.counters.deadLettered).toBe(0);
    expect(s.coordinator.counters.corruptWorkflows).toBe(0);
    expect(saves).toBe(0);
    expect((await s.store.getWorkflow('wf-newer'))?.status).toBe('pending');
    expect((await s.store.load('wf-newer'))?.runtime.activated).toBe(false);
  });
});
