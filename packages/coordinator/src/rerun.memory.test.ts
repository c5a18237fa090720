import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, taskState, tasksIn, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError } from '@jobq/ports';
import { useMemoryStacks, type MemoryStack } from './test-helpers/memory-stack';
import { wrapStore } from './test-helpers/wrappers';

// Re-running a task (docs/failure-model.md, "Re-running a task") on the in-memory adapters and a
// virtual clock: requests recorded by the client as records of their own, applied by the coordinator
// through the reducer, each exactly once — two made at the same instant, and one whose record the
// coordinator failed to clear after applying it.

const stacks = useMemoryStacks();

/** a → b → d and a → c; every task writes its attempt number as its output. */
const FLOW = {
  name: 'rerun',
  tasks: [
    { name: 'a', kwargs: { cmd: 'out 1' } },
    { name: 'b', depends_on: ['a'], kwargs: { cmd: 'out 2' } },
    { name: 'c', depends_on: ['a'], kwargs: { cmd: 'out 3' } },
    { name: 'd', depends_on: ['b'], kwargs: { cmd: 'out 4' } },
  ],
};

function attempts(runtime: WorkflowRuntime): Record<string, number> {
  return Object.fromEntries([...tasksIn(runtime)].map(([name, t]) => [name, t.attemptNo]));
}

function runs(s: MemoryStack, workflowId: string): Record<string, number> {
  return Object.fromEntries(['a', 'b', 'c', 'd'].map((t) => [t, s.runCount(t, workflowId)]));
}

describe('re-running a task (in memory, virtual time)', () => {
  it('applies two requests made at the same instant each exactly once, promptly on their wake-ups; the finished workflow runs again and completes', async () => {
    // The re-run scan (the lost-task sweep's period) once an hour: only the wake-ups can apply the requests in time.
    const s = await stacks.open({ coordinator: { timeoutSweepIntervalInMs: 3_600_000 } });
    const first = await s.run(FLOW);
    expect(first.status).toBe('completed');
    const workflowId = first.workflowId;
    const finishedAt = first.finishedAt!;

    // Both requests at once, at the same virtual instant: two records, neither overwrites the other.
    const [b, c] = await Promise.all([s.client.rerun(workflowId, 'b', { downstream: true }), s.client.rerun(workflowId, 'c')]);
    expect(b).toMatchObject({ requested: true, tasks: ['b', 'd'] });
    expect(c).toMatchObject({ requested: true, tasks: ['c'] });
    if (!b.requested || !c.requested) throw new Error('unreachable');
    expect(b.requestedAt).toBe(c.requestedAt);
    expect(b.requestId).not.toBe(c.requestId);
    expect((await s.store.listReruns({ workflowId })).items).toHaveLength(2);

    const start = s.clock.now();
    const done = await s.waitFor(workflowId, (r) => r.status === 'completed' && r.finishedAt !== finishedAt);
    expect(s.clock.now() - start).toBeLessThan(10_000);
    expect(attempts(done)).toEqual({ a: 1, b: 2, c: 2, d: 2 });
    expect(taskState(done, 'd')).toMatchObject({ status: 'completed', outputRef: '4' });
    expect(done.rerunsApplied?.map((r) => r.id).sort()).toEqual([b.requestId, c.requestId].sort());
    // Both records are cleared; nothing runs again.
    await s.until(async () => (await s.store.listReruns({ workflowId })).items.length === 0);
    await s.clock.advance(60_000);
    expect(runs(s, workflowId)).toEqual({ a: 1, b: 2, c: 2, d: 2 });
    expect(attempts((await s.store.load(workflowId))!.runtime)).toEqual({ a: 1, b: 2, c: 2, d: 2 });
    expect(s.coordinator.counters.requestsApplied).toBe(2);
  });

  it('a record whose clear failed after its save is listed again by the re-run scan and cleared, never applied twice', async () => {
    let failures = 1;
    const s = await stacks.open({
      coordinatorStore: (store) =>
        wrapStore(store, null, {
          clearRerun: (_workflowId, _requestId, clear) => {
            if (failures-- > 0) return Promise.reject(new JobqError('unavailable', 'the storage service could not be reached (test)'));
            return clear();
          },
        }),
    });
    const first = await s.run(FLOW);
    const workflowId = first.workflowId;
    const request = await s.client.rerun(workflowId, 'a', { downstream: true });
    expect(request).toMatchObject({ requested: true, tasks: ['a', 'b', 'c', 'd'] });
    await s.waitFor(workflowId, (r) => r.status === 'completed' && r.finishedAt !== first.finishedAt);
    await s.until(async () => (await s.store.listReruns({ workflowId })).items.length === 0);
    await s.clock.advance(90_000); // three more scans
    expect(failures).toBeLessThan(0);
    expect(s.logs.some((line) => line.includes('the storage service could not be reached (test)'))).toBe(true);
    expect(runs(s, workflowId)).toEqual({ a: 2, b: 2, c: 2, d: 2 });
    expect(attempts((await s.store.load(workflowId))!.runtime)).toEqual({ a: 2, b: 2, c: 2, d: 2 });
  });

  it('a request the runtime can no longer take (its task is running now) is cleared with a notice; the client refuses such requests and writes nothing', async () => {
    const s = await stacks.open();
    const workflowId = await s.submit({
      name: 'busy',
      tasks: [
        { name: 'slow', kwargs: { cmd: 'sleep 600' } },
        { name: 'after', depends_on: ['slow'], kwargs: { cmd: 'true' } },
      ],
    });
    await s.waitFor(workflowId, (r) => taskState(r, 'slow')?.status === 'running');
    // The client checks first: nothing is recorded.
    expect(await s.client.rerun(workflowId, 'slow')).toEqual({
      requested: false,
      reason: 'refused',
      message: 'task "slow" is running now (attempt 1): wait until it has finished',
    });
    expect(await s.client.rerun(workflowId, 'after')).toMatchObject({
      requested: false,
      reason: 'refused',
      message: expect.stringContaining('has not run yet (pending)'),
    });
    expect(await s.client.rerun(workflowId, 'nope')).toEqual({
      requested: false,
      reason: 'unknown-task',
      message: `workflow "${workflowId}" has no task "nope" (its tasks: slow, after)`,
    });
    expect((await s.store.listReruns()).items).toEqual([]);
    // A record written anyway (as by a client that checked before the task was dispatched).
    await s.store.requestRerun({
      workflowId,
      requestId: 'late',
      taskName: 'slow',
      downstream: false,
      requestedAt: new Date(s.clock.now()).toISOString(),
    });
    await s.until(async () => (await s.store.listReruns()).items.length === 0);
    expect(s.logs).toContain(
      `workflow ${workflowId}: re-run of "slow" not applied: task "slow" is running now (attempt 1): wait until it has finished`,
    );
    const done = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status));
    expect(done.status).toBe('completed');
    expect(s.runCount('slow', workflowId)).toBe(1);
    expect(done.rerunsApplied?.map((r) => r.id)).toEqual(['late']);
  });
});
