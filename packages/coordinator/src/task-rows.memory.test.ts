import { describe, expect, it } from '@jest/globals';
import { changedTasks, taskState, tasksIn, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError, type WorkflowStore } from '@jobq/ports';
import { useMemoryStacks, type MemoryStack } from './test-helpers/memory-stack';
import { wrapStore } from './test-helpers/wrappers';

// Task rows off the critical path (docs/failure-model.md, "Task rows"), through the real
// coordinator and workers on the in-memory adapters, in virtual time.

const stacks = useMemoryStacks();

/** Root → `n` leaves that sleep `sleep(i)` seconds → sink. */
function fan(name: string, n: number, sleep: (i: number) => number) {
  return {
    name,
    tasks: [
      { name: 'root', kwargs: { cmd: 'true' } },
      ...Array.from({ length: n }, (_, i) => ({ name: `leaf-${i}`, depends_on: ['root'], kwargs: { cmd: `sleep ${sleep(i)}` } })),
      { name: 'sink', depends_on: Array.from({ length: n }, (_, i) => `leaf-${i}`), kwargs: { cmd: 'true' } },
    ],
  };
}

/** Task name → row status / runtime status, for the tasks whose row differs from the runtime. */
async function behind(s: MemoryStack, workflowId: string): Promise<Record<string, string>> {
  const runtime = (await s.store.load(workflowId))!.runtime;
  const rows = new Map((await s.store.listTasks({ workflowId, limit: 10_000 })).items.map((r) => [r.taskName, r]));
  const out: Record<string, string> = {};
  for (const [name, state] of tasksIn(runtime)) {
    const row = rows.get(name);
    if (row?.status !== state.status || row.attemptNo !== state.attemptNo) out[name] = `${row?.status}/${state.status}`;
  }
  return out;
}

/**
 * The coordinator's store, watched: every row write (deferred or by a save) is checked never to go
 * back in time for its task, and every task a save changes is checked to have its row written no
 * later than `boundInMs` after that save.
 */
function watched(s: () => MemoryStack, boundInMs: number) {
  const violations: string[] = [];
  const written = new Map<string, string>();
  const saves: number[] = [];
  const record = (runtime: WorkflowRuntime, names: readonly string[]) => {
    for (const name of names) {
      if (!taskState(runtime, name)) continue;
      const last = written.get(name);
      if (last !== undefined && last > runtime.updatedAt)
        violations.push(`${name}: a row of ${runtime.updatedAt} written after one of ${last}`);
      written.set(name, runtime.updatedAt);
    }
  };
  const wrap = (store: WorkflowStore): WorkflowStore =>
    wrapStore(
      store,
      async (runtime, _etag, save, options) => {
        const result = await save();
        const stack = s();
        saves.push(stack.clock.now());
        const changed = changedTasks(options?.previous, runtime);
        if (!options?.deferTaskRows) record(runtime, [...changed, ...(options?.alsoTaskRows ?? [])]);
        // 1 ms after the bound: a timer due at the bound itself may be set after this one.
        void stack.clock.sleep(boundInMs + 1).then(async () => {
          const rows = new Map(
            (await stack.store.listTasks({ workflowId: runtime.workflowId, limit: 10_000 })).items.map((r) => [r.taskName, r.updatedAt]),
          );
          for (const name of changed) {
            const at = rows.get(name) ?? '';
            if (at < runtime.updatedAt)
              violations.push(`${name}: changed at ${runtime.updatedAt}, its row still of ${at} ${boundInMs} ms later`);
          }
        });
        return result;
      },
      {
        writeTaskRows: async (runtime, names, write) => {
          const result = await write();
          const failed = new Set(result.failed);
          record(
            runtime,
            names.filter((n) => !failed.has(n)),
          );
          return result;
        },
      },
    );
  return { violations, saves, wrap };
}

describe('task rows off the critical path (in memory, virtual time)', () => {
  it('lag their runtime by at most 2 s, never go back to an older state, and are final when the workflow ends', async () => {
    let stack: MemoryStack | null = null;
    const watch = watched(() => stack!, 2_000);
    stack = await stacks.open({ workers: 6, coordinatorStore: watch.wrap });
    const s = stack;
    const done = await s.run(fan('lag', 40, (i) => 0.2 + ((i * 7) % 13) * 0.35));
    expect(done.status).toBe('completed');
    expect(await behind(s, done.workflowId)).toEqual({});
    await s.clock.advance(3_000); // the last checks run
    expect(watch.violations).toEqual([]);
    // Rows were gathered: fewer row writes than saves.
    expect(s.coordinator.counters.rowFlushes).toBeGreaterThan(0);
    expect(s.coordinator.counters.rowFlushes).toBeLessThan(s.coordinator.counters.saves);
  });

  it('writes the rows of a finished workflow with its last save, before its index row says so', async () => {
    const s = await stacks.open({ workers: 4, coordinator: { taskRowDelayInMs: 600_000 } });
    const workflowId = await s.submit(fan('final', 10, (i) => 0.1 * (i + 1)));
    let rowsAtEnd: Record<string, string> | null = null;
    await s.until(async () => {
      if ((await s.store.getWorkflow(workflowId))?.status !== 'completed') return false;
      rowsAtEnd = await behind(s, workflowId);
      return true;
    });
    // The moment the index row says completed, every task row is final, though no deferred write ran.
    expect(rowsAtEnd).toEqual({});
    expect(s.coordinator.counters.rowFlushes).toBe(0);
  });

  it('writes every waiting row when the coordinator stops', async () => {
    const s = await stacks.open({ workers: 4, coordinator: { taskRowDelayInMs: 600_000 } });
    const workflowId = await s.submit(fan('stop', 4, () => 1_000));
    await s.waitFor(workflowId, (r) => r.counts.running === 4);
    await s.clock.advance(1_000);
    expect(await behind(s, workflowId)).toMatchObject({ 'leaf-0': 'pending/running', root: 'ready/completed' });
    await s.coordinator.stop();
    expect(await behind(s, workflowId)).toEqual({});
    expect(s.coordinator.counters.rowFlushes).toBe(1);
  });

  it(`writes at once when more than 256 rows changed, whatever the delay`, async () => {
    const s = await stacks.open({ workers: 2, coordinator: { taskRowDelayInMs: 600_000 } });
    const workflowId = await s.submit(fan('burst', 300, () => 1_000));
    await s.waitFor(workflowId, (r) => r.counts.running === 300);
    await s.clock.settle();
    // The root's completion dispatched 300 leaves: written with no wait; only the root's row waits.
    expect(await behind(s, workflowId)).toEqual({});
    expect(s.coordinator.counters.rowFlushes).toBe(1);
  });

  it('after a coordinator stopped with rows not written (lease lost, no flush), the next one writes them from the runtime without a save', async () => {
    let stack: MemoryStack | null = null;
    const watch = watched(() => stack!, 600_000);
    stack = await stacks.open({ workers: 4, coordinator: { taskRowDelayInMs: 600_000 }, coordinatorStore: watch.wrap });
    const s = stack;
    const workflowId = await s.submit(fan('crash', 4, () => 1_000));
    await s.waitFor(workflowId, (r) => r.counts.running === 4);
    await s.clock.advance(1_000);
    const stale = await behind(s, workflowId);
    expect(Object.keys(stale).sort()).toEqual(['leaf-0', 'leaf-1', 'leaf-2', 'leaf-3', 'root']);
    s.store.loseLease('injected: the coordinator died'); // it stops at once, writing nothing more
    await s.clock.advance(100);
    const savesBefore = watch.saves.length;
    const next = s.newCoordinator({ taskRowDelayInMs: 2_000 });
    await next.start();
    const startedAt = s.clock.now();
    await s.until(
      async () => Object.keys(await behind(s, workflowId)).length === 0,
      () => 'rows still behind',
      10_000,
    );
    expect(s.clock.now() - startedAt).toBeLessThanOrEqual(2_100);
    expect(watch.saves.length).toBe(savesBefore); // no save: the rows came from the runtime as stored
    expect(next.counters.rowResyncs).toBe(1);
    expect(watch.violations).toEqual([]);
    // The workflow goes on from the cached runtime: its next save writes only what it changed.
    await s.until(
      async () => (await s.store.getWorkflow(workflowId))?.status === 'completed',
      () => 'not completed',
      1_200_000,
    );
    expect(await behind(s, workflowId)).toEqual({});
  });

  it('index rows: one write per workflow in flight, never an older state after a newer one; a write lost with the coordinator is made by the next one', async () => {
    let inFlight = 0;
    let overlaps = 0;
    const written: string[] = [];
    let lose = false;
    const s = await stacks.open({
      workers: 4,
      coordinatorStore: (store) =>
        wrapStore(store, null, {
          writeIndexRow: async (runtime, write) => {
            if (lose) return; // the write never reaches the service
            if (inFlight++ > 0) overlaps++;
            await s.clock.sleep(30); // slow enough for saves to queue up behind it
            await write();
            inFlight--;
            written.push(runtime.updatedAt);
          },
        }),
    });
    const definition = fan('index', 12, (i) => 0.05 * i);
    definition.tasks[definition.tasks.length - 1]!.kwargs = { cmd: 'sleep 100' }; // the sink keeps it running
    const workflowId = await s.submit(definition);
    await s.waitFor(workflowId, (r) => r.counts.completed >= 6);
    const indexCaughtUp = async () =>
      (await s.store.getWorkflow(workflowId))?.updatedAt === (await s.store.load(workflowId))?.runtime.updatedAt;
    await s.until(indexCaughtUp, () => 'index row behind');
    expect(overlaps).toBe(0);
    expect(written.length).toBeGreaterThan(1);
    expect([...written].sort()).toEqual(written); // each write newer than the one before
    // Now the coordinator's index writes are lost; the runtime moves on; then the coordinator dies.
    lose = true;
    await s.waitFor(workflowId, (r) => r.tasks.sink?.status === 'running');
    expect(await indexCaughtUp()).toBe(false);
    s.store.loseLease('injected: the coordinator died');
    await s.clock.advance(100);
    const next = s.newCoordinator({}, { store: (store) => store });
    await next.start();
    await s.until(indexCaughtUp, () => 'index row still behind', 10_000);
    expect((await s.store.getWorkflow(workflowId))?.status).toBe('running');
  });

  it('the resync at start tries a workflow again when its load failed', async () => {
    const s = await stacks.open({ workers: 2, coordinator: { taskRowDelayInMs: 600_000 } });
    const workflowId = await s.submit(fan('resync-retry', 2, () => 1_000));
    await s.waitFor(workflowId, (r) => r.counts.running === 2);
    s.store.loseLease('injected: the coordinator died');
    await s.clock.advance(100);
    expect(Object.keys(await behind(s, workflowId)).sort()).toEqual(['leaf-0', 'leaf-1', 'root']);
    let failures = 1;
    const next = s.newCoordinator(
      { taskRowDelayInMs: 2_000 },
      {
        store: (store) => ({
          ...wrapStore(store, null),
          load: async (id, options) => {
            if (failures-- > 0) throw new JobqError('unavailable', 'injected: the blob service is down');
            return store.load(id, options);
          },
        }),
      },
    );
    await next.start();
    await s.until(
      async () => Object.keys(await behind(s, workflowId)).length === 0,
      () => 'rows still behind',
      10_000,
    );
    expect(next.counters.rowResyncs).toBe(1);
    expect(s.logs.join('\n')).toMatch(/workflow .+: writing its task rows again failed: unavailable: injected/);
  });
});
