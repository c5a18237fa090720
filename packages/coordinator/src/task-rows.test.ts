import { describe, expect, it } from '@jest/globals';
import { createRuntime, reduce, validateWorkflow, type WorkflowEvent, type WorkflowRuntime } from '@jobq/dag-core';
import { MemoryWorkflowStore } from '@jobq/memory';
import { JobqError, VirtualClock, type TaskRowsResult } from '@jobq/ports';
import { TaskRowWriter } from './task-rows';
import { wrapStore } from './test-helpers/wrappers';

// The writer of deferred task rows on its own: a memory store, a virtual clock, no coordinator.

function definition(leaves: number) {
  const result = validateWorkflow({
    name: 'rows',
    tasks: [
      { name: 'root', kwargs: { cmd: 'true' } },
      ...Array.from({ length: leaves }, (_, i) => ({ name: `leaf-${i}`, depends_on: ['root'], kwargs: { cmd: 'true' } })),
    ],
  });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.value;
}

const START = Date.UTC(2026, 0, 1);
const at = (ms: number) => new Date(START + ms).toISOString();
const step = (runtime: WorkflowRuntime, event: WorkflowEvent) => reduce(runtime, event).runtime;
const complete = (runtime: WorkflowRuntime, taskName: string, ms: number) =>
  step(runtime, { type: 'completion', now: at(ms), taskName, attemptNo: null, success: true, outputRef: null, error: null });

interface Setup {
  clock: VirtualClock;
  store: MemoryWorkflowStore;
  writer: TaskRowWriter;
  /** Each writeTaskRows call: virtual time, runtime, names. */
  writes: Array<{ at: number; runtime: WorkflowRuntime; names: readonly string[] }>;
  counters: { rowFlushes: number; rowsErrors: number };
  logs: string[];
  r0: WorkflowRuntime;
  /** The task's row status. */
  row(name: string): Promise<string | undefined>;
}

async function setup(
  leaves: number,
  options: { hook?: (write: () => Promise<TaskRowsResult>) => Promise<TaskRowsResult> } = {},
): Promise<Setup> {
  const clock = new VirtualClock({ startMs: START });
  const store = new MemoryWorkflowStore();
  const r0 = createRuntime(definition(leaves), { workflowId: 'wf', now: at(0) });
  await store.create(r0, 'h');
  const writes: Setup['writes'] = [];
  const wrapped = wrapStore(store, null, {
    writeTaskRows: (runtime, names, write) => {
      writes.push({ at: clock.now(), runtime, names: [...names] });
      return options.hook ? options.hook(write) : write();
    },
  });
  const counters = { rowFlushes: 0, rowsErrors: 0 };
  const logs: string[] = [];
  const writer = new TaskRowWriter({
    store: wrapped,
    clock,
    delayInMs: 2_000,
    maxPending: 256,
    signal: new AbortController().signal,
    log: (l) => logs.push(l),
    counters,
  });
  const row = async (name: string) =>
    (await store.listTasks({ workflowId: 'wf', namePrefix: name })).items.find((r) => r.taskName === name)?.status;
  return { clock, store, writer, writes, counters, logs, r0, row };
}

describe('TaskRowWriter', () => {
  it('writes a changed row no later than the delay after the first waiting change, gathering the changes meanwhile', async () => {
    const s = await setup(3);
    const r1 = step(s.r0, { type: 'activate', now: at(0) });
    s.writer.add(r1, ['root']);
    await s.clock.advance(1_500);
    const r2 = complete(r1, 'root', 1_500);
    s.writer.add(r2, ['root', 'leaf-0', 'leaf-1', 'leaf-2']);
    await s.clock.advance(499);
    expect(s.writes).toEqual([]);
    expect(await s.row('root')).toBe('ready');
    await s.clock.advance(1);
    // Due 2 s after the first change (t = 0), with every change made since, from the newest runtime.
    expect(s.writes.map((w) => [w.at - START, w.runtime === r2, [...w.names].sort()])).toEqual([
      [2_000, true, ['leaf-0', 'leaf-1', 'leaf-2', 'root']],
    ]);
    expect(await s.row('root')).toBe('completed');
    expect(await s.row('leaf-2')).toBe('running');
    expect(s.writer.pendingRows).toBe(0);
    // Nothing waits: no more writes.
    await s.clock.advance(10_000);
    expect(s.writes).toHaveLength(1);
    expect(s.counters.rowFlushes).toBe(1);
  });

  it(`writes at once when 256 rows wait, without waiting for the clock`, async () => {
    const s = await setup(300);
    const r1 = complete(step(s.r0, { type: 'activate', now: at(0) }), 'root', 0); // 300 leaves dispatched
    s.writer.add(
      r1,
      Array.from({ length: 200 }, (_, i) => `leaf-${i}`),
    );
    await s.clock.settle();
    expect(s.writes).toEqual([]);
    s.writer.add(
      r1,
      Array.from({ length: 100 }, (_, i) => `leaf-${200 + i}`),
    );
    await s.clock.settle();
    expect(s.writes.map((w) => [w.at - START, w.names.length])).toEqual([[0, 300]]);
    expect(await s.row('leaf-299')).toBe('running');
  });

  it('never lets an older state land after a newer one: a change made while its row is being written waits for that write', async () => {
    let release: () => void = () => undefined;
    let first = true;
    const s = await setup(1, {
      hook: async (write) => {
        if (first) {
          first = false;
          await new Promise<void>((resolve) => (release = resolve));
        }
        return write();
      },
    });
    const r1 = step(s.r0, { type: 'activate', now: at(0) });
    s.writer.add(r1, ['root']);
    await s.clock.advance(2_000); // the write of r1 starts and hangs
    expect(s.writes).toHaveLength(1);
    const r2 = complete(r1, 'root', 2_100);
    s.writer.add(r2, ['root', 'leaf-0']);
    const taken = s.writer.take('wf'); // a final save waits for the write in flight
    let tookAt: number | null = null;
    void taken.then(() => (tookAt = s.clock.now()));
    await s.clock.advance(5_000);
    expect(s.writes).toHaveLength(1); // no second write of the same rows while the first is in flight
    expect(tookAt).toBeNull();
    release();
    expect((await taken).sort()).toEqual(['leaf-0', 'root']);
    expect(await s.row('root')).toBe('running'); // r1's write landed; r2's rows went to the taker
    // Given back (that save failed), they are written from r2, after the delay.
    s.writer.add(r2, ['root', 'leaf-0']);
    await s.clock.advance(2_000);
    expect(s.writes.map((w) => w.runtime === r2)).toEqual([false, true]);
    expect(await s.row('root')).toBe('completed');
  });

  it('writes rows whose write failed again after the delay, from the newest runtime, and counts the failure', async () => {
    let failures = 1;
    const s = await setup(1, {
      hook: async (write) => (failures-- > 0 ? { failed: ['root'], error: new JobqError('unavailable', 'injected') } : write()),
    });
    const r1 = step(s.r0, { type: 'activate', now: at(0) });
    s.writer.add(r1, ['root']);
    await s.clock.advance(2_000);
    expect(s.counters.rowsErrors).toBe(1);
    expect(s.logs.join('\n')).toMatch(/workflow wf: 1 task row\(s\) not written \(written again later\): injected/);
    const r2 = complete(r1, 'root', 2_500);
    s.writer.add(r2, ['leaf-0']);
    await s.clock.advance(1_999);
    expect(s.writes).toHaveLength(1);
    await s.clock.advance(1);
    expect(s.writes.map((w) => [w.at - START, w.runtime === r2, [...w.names].sort()])).toEqual([
      [2_000, false, ['root']],
      [4_000, true, ['leaf-0', 'root']],
    ]);
    expect(await s.row('root')).toBe('completed');
  });

  it('flushAll writes every waiting row at once and arms no timer after it', async () => {
    const s = await setup(2);
    const r1 = step(s.r0, { type: 'activate', now: at(0) });
    s.writer.add(r1, ['root']);
    await s.writer.flushAll();
    expect(s.writes.map((w) => w.at - START)).toEqual([0]);
    expect(await s.row('root')).toBe('running');
    expect(s.clock.nextTimerAt()).toBeNull();
  });
});
