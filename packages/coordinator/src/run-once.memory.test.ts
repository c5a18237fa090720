import { describe, expect, it } from '@jest/globals';
import type { MemoryWorkflowStore } from '@jobq/memory';
import type { WorkflowStore } from '@jobq/ports';
import { useMemoryStacks } from './test-helpers/memory-stack';
import { observeCalls } from './test-helpers/wrappers';

// `runOnce()`: one turn of the coordinator's loop, stepped by the caller on its clock (the sharding
// benchmark steps its runners this way): the scans due, one receive that does not wait, the batch
// folded, saved and acked before it returns.

const stacks = useMemoryStacks();

/** Counts the store calls the coordinator makes, by method. */
function counting(calls: Map<string, number>) {
  return (store: MemoryWorkflowStore): WorkflowStore => observeCalls(store, (method) => calls.set(method, (calls.get(method) ?? 0) + 1));
}

const chain = {
  name: 'chain',
  tasks: [
    { name: 'a', kwargs: { cmd: 'true' } },
    { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
  ],
};

describe('Coordinator.runOnce', () => {
  it('steps the loop one batch at a time: returns what it received, acks it, and runs the scans due on its clock', async () => {
    const s = await stacks.open({ start: false });
    await s.worker.stop(); // a worker is started below, for one task
    const calls = new Map<string, number>();
    const c = s.newCoordinator({ statsIntervalInMs: 500, cancelPollIntervalInMs: 200 }, { store: counting(calls) });
    const id = await s.submit(chain);

    // The wake-up: the workflow is activated, `a` pushed, the message acked.
    expect(await c.runOnce()).toBe(1);
    expect(c.health()).toMatchObject({ phase: 'running', holds: 'lease' });
    expect((await s.store.load(id))?.runtime.tasks.a?.status).toBe('running');
    expect(s.pushed.get('a')).toBe(1);
    expect(s.completions.counts().messages).toBe(0);
    expect(c.counters).toMatchObject({ batches: 1, messages: 1, wakeups: 1 });
    // Scans and stats ran once, on the first turn.
    expect(calls.get('writeCoordinatorStats')).toBe(1);
    const scans = calls.get('listRequests') ?? 0;
    expect(scans).toBeGreaterThan(0);

    // Nothing waiting: 0 at once (no wait on the clock), and nothing is due again yet.
    expect(await c.runOnce()).toBe(0);
    expect(calls.get('writeCoordinatorStats')).toBe(1);
    expect(calls.get('listRequests')).toBe(scans);

    // Time moves only when the caller moves it: past the stats period, the next turn writes them.
    await s.clock.advance(500);
    expect(await c.runOnce()).toBe(0);
    expect(calls.get('writeCoordinatorStats')).toBe(2);
    expect(calls.get('listRequests')).toBe(2 * scans);

    // A completion of `a` (as a worker sends it): one turn applies it and pushes `b`.
    const w = s.startWorker(1);
    await s.until(() => s.completions.counts().messages === 1);
    await w.stop();
    expect(await c.runOnce()).toBe(1);
    const runtime = (await s.store.load(id))!.runtime;
    expect(runtime.tasks.a?.status).toBe('completed');
    expect(runtime.tasks.b?.status).toBe('running');
    expect(c.counters.completionsApplied).toBe(1);
    expect(s.completions.counts().messages).toBe(0);

    // stop() releases the lease as after start(): another coordinator takes it at once.
    await c.stop();
    expect(c.health()).toMatchObject({ phase: 'stopped', holds: 'nothing' });
    expect(await c.runOnce()).toBe(0);
    const next = s.newCoordinator();
    expect(await next.start()).toBe(true);
    s.startWorker(1);
    await s.waitFor(id, (r) => r.status === 'completed');
  });

  it('is not for a coordinator whose loop was started, and start() is refused once stepped', async () => {
    const s = await stacks.open({ start: false });
    const started = s.newCoordinator();
    await started.start();
    await expect(started.runOnce()).rejects.toThrow('runOnce');
    await started.stop();

    const stepped = s.newCoordinator();
    expect(await stepped.runOnce()).toBe(0);
    expect(() => stepped.start()).toThrow('already called');
  });
});
