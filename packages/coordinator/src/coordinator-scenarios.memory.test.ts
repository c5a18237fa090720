import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, withTaskStates, type WorkflowRuntime } from '@jobq/dag-core';
import { scriptedRun, useMemoryStacks, type SimulatedRun } from './test-helpers/memory-stack';

// Scenarios whose point is a timer (a task timeout, the ready-repair sweep) or the order of events
// over time (max-fan-in gates), on the in-memory adapters and a virtual clock: they take no wall-clock
// time, and their timestamps are exact. The end-to-end ones on Azurite, real workers and real
// processes are in coordinator-scenarios.test.ts.

const stacks = useMemoryStacks();

function statuses(runtime: WorkflowRuntime): Record<string, string> {
  return Object.fromEntries(Object.entries(runtime.tasks).map(([name, task]) => [name, task.status]));
}

describe('Coordinator scenarios (in memory, virtual time)', () => {
  it('timeout: attempt 1 runs past timeout_s and is failed (sweep or worker); attempt 2 completes the workflow', async () => {
    // Attempt 1 would run for 30 s; attempt 2 ends at once.
    const run: SimulatedRun = (task, context) =>
      scriptedRun(task.attemptNo === 1 ? { ...task, kwargs: { cmd: 'sleep 30' } } : task, context);
    const s = await stacks.open({ run, coordinator: { timeoutSweepIntervalInMs: 300 } });
    const runtime = await s.run({
      name: 'timeout',
      tasks: [
        { name: 'slow', timeout_s: 1, num_retries: 1, kwargs: { cmd: 'true' } },
        { name: 'after', depends_on: ['slow'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(runtime.status).toBe('completed');
    expect(statuses(runtime)).toEqual({ slow: 'completed', after: 'completed' });
    expect(runtime.tasks.slow?.attemptNo).toBe(2);
    // Attempt 2 was dispatched once attempt 1 had run for its 1 s, not before, and not 30 s later.
    const started = Date.parse(runtime.createdAt);
    const retried = Date.parse(runtime.tasks.slow?.dispatchedAt ?? '') - started;
    expect(retried).toBeGreaterThanOrEqual(1_000);
    expect(retried).toBeLessThan(5_000);
    // A late completion of attempt 1 (if anything still sent one) changes nothing.
    await s.clock.advance(60_000);
    const later = await s.store.load(runtime.workflowId);
    expect(later?.runtime.status).toBe('completed');
    expect(later?.runtime.tasks.slow).toMatchObject({ status: 'completed', attemptNo: 2 });
    expect(s.runCount('slow')).toBe(2);
  });

  it('ready-repair dispatches a ready task whose dispatch was lost, once the runtime is older than the threshold', async () => {
    const s = await stacks.open({
      start: false,
      coordinator: { readySweepIntervalInMs: 300, readyRepairThresholdInMs: 1_000, cancelPollIntervalInMs: 200 },
    });
    const workflowId = await s.submit({
      name: 'lost-dispatch',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    });
    // Lose the submit wake-up ...
    for (const message of await s.completions.receive({ maxMessages: 32, maxWaitTimeInMs: 0 })) await s.completions.complete(message);
    expect(await s.completions.approximateMessageCount()).toBe(0);
    // ... and record an activation whose push never happened: `a` is ready, nothing is on the queue.
    const loaded = await s.store.load(workflowId);
    if (!loaded) throw new Error('no runtime');
    expect(loaded.runtime.tasks.a?.status).toBe('ready');
    const lost: WorkflowRuntime = withTaskStates(loaded.runtime, [], { activated: true, status: 'running' });
    await s.store.save(lost, loaded.etag, { previous: loaded.runtime });
    expect((await s.store.getWorkflow(workflowId))?.status).toBe('running');

    const startedAt = s.clock.now();
    await s.coordinator.start();
    const done = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status));
    expect(done.status).toBe('completed');
    expect(statuses(done)).toEqual({ a: 'completed', b: 'completed' });
    expect(done.tasks.a?.attemptNo).toBe(1);
    // Not before the threshold: the runtime was younger than 1 s at first.
    expect(Date.parse(done.tasks.a?.dispatchedAt ?? '') - startedAt).toBeGreaterThanOrEqual(1_000);
    expect(s.coordinator.counters.readyRepairs).toBe(1);
    expect(s.coordinator.counters.activations).toBe(0);
    expect(s.logs.some((line) => line.includes(`workflow ${workflowId}: ready-repair dispatched its ready tasks`))).toBe(true);
  });

  it('--max-fan-in 10 over 50 leaves: merge nodes complete without running, gates hold each batch back, the sink sees the 50 real parents', async () => {
    let sinkUpstream: Record<string, string | null> | undefined;
    const run: SimulatedRun = (task, context) => {
      if (task.taskName === 'sink') sinkUpstream = task.upstream;
      return scriptedRun(task, context);
    };
    const s = await stacks.open({ run, workers: 4 });
    const leaves = Array.from({ length: 50 }, (_, i) => `l${String(i).padStart(2, '0')}`);
    const runtime = await s.run(
      {
        name: 'max-fan-in',
        tasks: [
          ...leaves.map((name) => ({ name, kwargs: { cmd: 'sleep 0.1' } })),
          { name: 'sink', depends_on: leaves, kwargs: { cmd: 'true' } },
        ],
      },
      { maxFanIn: 10 },
    );
    expect(runtime.status).toBe('completed');
    const merges = [0, 1, 2, 3, 4].map((i) => `__merge_sink_${i}`);
    for (const merge of merges) expect(runtime.tasks[merge]).toMatchObject({ status: 'completed' });
    expect(Object.keys(runtime.tasks)).toHaveLength(56);
    // Never dispatched: no worker line mentions a merge node, no simulated run either.
    expect(s.workerLogs.filter((line) => line.includes('__merge_'))).toEqual([]);
    expect([...s.runs.keys()].filter((key) => key.includes('__merge_'))).toEqual([]);
    // Batch i > 0 starts only after merge i − 1 completed.
    const time = (value: string | null | undefined) => {
      expect(typeof value).toBe('string');
      return Date.parse(value ?? '');
    };
    for (let i = 1; i < 5; i++) {
      const gateDone = time(runtime.tasks[`__merge_sink_${i - 1}`]?.completedAt);
      for (const leaf of leaves.slice(i * 10, i * 10 + 10))
        expect(time(runtime.tasks[leaf]?.dispatchedAt)).toBeGreaterThanOrEqual(gateDone);
      // ... and merge i − 1 waited for every leaf of batch i − 1.
      for (const leaf of leaves.slice((i - 1) * 10, i * 10)) expect(time(runtime.tasks[leaf]?.completedAt)).toBeLessThanOrEqual(gateDone);
    }
    expect(Object.keys(sinkUpstream ?? {}).sort()).toEqual(leaves);
  });
});
