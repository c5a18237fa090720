import { describe, expect, it } from '@jest/globals';
import { MemoryOutputStore, MemoryTaskQueue, MemoryWorkflowStore } from '@jobq/memory';
import { isJobqError, VirtualClock } from '@jobq/ports';
import { Coordinator, type CoordinatorOptions } from './coordinator';
import { observeCalls } from './test-helpers/wrappers';

// A standby coordinator (`waitForLease`, docs/operations.md#a-standby-coordinator) on the memory
// store and a virtual clock: it tries the lease every poll interval, takes over once it is free,
// and stop() ends the wait.

function stack() {
  const clock = new VirtualClock();
  const outputs = new MemoryOutputStore({ outputsContainer: 'mem-outputs', workflowsContainer: 'mem-workflows' });
  const store = new MemoryWorkflowStore({ stateBlobs: outputs });
  const completions = new MemoryTaskQueue({ name: 'mem-workflow-completions', clock });
  const tasks = new MemoryTaskQueue({ name: 'mem-default', clock });
  let tries = 0;
  const counted = observeCalls(store, (method) => {
    if (method === 'acquireLease') tries++;
  });
  const logs: string[] = [];
  const coordinator = (options: CoordinatorOptions = {}) =>
    new Coordinator({
      store: counted,
      completions,
      queues: () => tasks,
      outputs,
      options: { clock, log: (l) => logs.push(l), ...options },
    });
  /** Waits for `promise` while running the clock (a running coordinator's loop sleeps on it). */
  const onClock = async <T>(promise: Promise<T>): Promise<T> => {
    let done = false;
    const result = promise.finally(() => (done = true));
    await clock.runUntil(() => done);
    return result;
  };
  return { clock, store, coordinator, logs, tries: () => tries, onClock };
}

describe('Coordinator waitForLease (in memory, virtual time)', () => {
  it('without it, a held lease fails the start with lease-held', async () => {
    const s = stack();
    await s.store.acquireLease();
    const error = await s
      .coordinator()
      .start()
      .catch((e: unknown) => e);
    expect(isJobqError(error, 'lease-held')).toBe(true);
  });

  it('waits as a standby, polling every interval, holding nothing; takes over once the holder stops', async () => {
    const s = stack();
    // Another coordinator holds the lease.
    const held = await s.store.acquireLease();
    const standby = s.coordinator({ waitForLease: true, leasePollIntervalInMs: 2_000 });
    let started: boolean | undefined;
    void standby.start().then((r) => (started = r));
    await s.clock.advance(0);
    expect(standby.health()).toMatchObject({ phase: 'waiting', holds: 'nothing' });
    const before = s.tries();
    await s.clock.advance(10_000);
    // One try at each 2 s of the 10 s.
    expect(s.tries() - before).toBe(5);
    expect(standby.health().lastTickAt).toBe(s.clock.now());
    expect(started).toBeUndefined();
    await held.release();
    const releasedAt = s.clock.now();
    await s.clock.runUntil(() => started !== undefined);
    expect(started).toBe(true);
    expect(s.clock.now() - releasedAt).toBeLessThanOrEqual(2_000);
    expect(standby.health()).toMatchObject({ phase: 'running', holds: 'lease' });
    expect(s.logs.some((l) => l.includes('waiting as a standby'))).toBe(true);
    expect(s.logs.some((l) => l.includes('taken over'))).toBe(true);
    await s.onClock(standby.stop());
    expect(standby.health()).toMatchObject({ phase: 'stopped', holds: 'nothing' });
    // The lease was released: another takes it at once.
    await (await s.store.acquireLease()).release();
  });

  it('stop() ends the wait at once: start() resolves false, nothing was taken, run() returns', async () => {
    const s = stack();
    const held = await s.store.acquireLease();
    const standby = s.coordinator({ waitForLease: true, leasePollIntervalInMs: 60_000 });
    let started: boolean | undefined;
    const starting = standby.start().then((r) => (started = r));
    await s.clock.advance(1_000);
    const at = s.clock.now();
    let stopped = false;
    void standby.stop().then(() => (stopped = true));
    expect(standby.health().phase).toBe('stopping');
    await s.clock.settle();
    await starting;
    expect(started).toBe(false);
    expect(stopped).toBe(true);
    expect(s.clock.now()).toBe(at);
    expect(standby.health()).toMatchObject({ phase: 'stopped', holds: 'nothing' });
    await standby.run();
    // The other still holds it.
    expect(isJobqError(await s.store.acquireLease().catch((e: unknown) => e), 'lease-held')).toBe(true);
    await held.release();
  });

  it('a lease taken just as stop() is called is released', async () => {
    const s = stack();
    const standby = s.coordinator({ waitForLease: true });
    const starting = standby.start();
    await s.onClock(standby.stop());
    expect(await starting).toBe(true);
    await (await s.store.acquireLease()).release();
  });
});
