import { describe, expect, it } from '@jest/globals';
import { JobqError, type WorkflowStore } from '@jobq/ports';
import { useMemoryStacks, type MemoryStack } from './test-helpers/memory-stack';
import { wrapStore } from './test-helpers/wrappers';

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
    await s.until(() => s.logs.filter((l) => l.includes('wf-outage') && l.includes('could not be reached')).length >= 10, () => 'ten failed deliveries');
    expect(await deadLetters(s)).toEqual([]);
    expect(s.coordinator.counters.deadLettered).toBe(0);
    // A permanent error: after 3 deliveries the message is dead-lettered with the reason.
    failWith = new JobqError('invalid-argument', 'read the index row failed: bad request (InvalidInput)');
    await s.until(async () => (await deadLetters(s)).length >= 1, () => 'a dead letter');
    const [body] = await deadLetters(s);
    expect(body).toContain('wf-outage');
    expect(s.logs.join('\n')).toMatch(/moved to the dead-letter queue: delivered 3 times without being applied: processing workflow wf-outage failed: invalid-argument: read the index row failed: bad request/);
    // Every message of the workflow in that batch (its wake-up, and the completion of the task the
    // request scan had started meanwhile) shares the fate.
    expect(s.coordinator.counters.deadLettered).toBe((await deadLetters(s)).length);
    failWith = null;
    expect(outage).toBe('wf-outage');
  });
});
