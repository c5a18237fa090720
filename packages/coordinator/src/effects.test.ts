import { describe, expect, it } from '@jest/globals';
import { createRuntime, parseWorkflow, type WorkflowRuntime } from '@jobq/dag-core';
import { decodeEnvelope, decodeWorkflowTask } from '@jobq/dag-core/wire';
import { JobqError, type OutputStore, type TaskQueue, type WorkflowStore } from '@jobq/ports';
import { MemoryTaskQueue } from '@jobq/memory';
import { applyEvents, RuntimeCache, type ApplyContext } from './effects';

const NOW = '2026-01-01T00:00:00.000Z';

/** load/save with a numeric ETag; `conflicts` saves fail with 412 (after someone else "wrote"). */
class FakeStore {
  etag = 1;
  saves = 0;
  loads = 0;
  conflicts = 0;
  constructor(public runtime: WorkflowRuntime | null) {}
  load(): Promise<{ runtime: WorkflowRuntime; etag: string } | null> {
    this.loads++;
    return Promise.resolve(this.runtime ? { runtime: this.runtime, etag: String(this.etag) } : null);
  }
  previousGiven: boolean[] = [];
  save(runtime: WorkflowRuntime, etag: string, options: { previous?: WorkflowRuntime } = {}): Promise<{ etag: string; rowsError: null }> {
    this.previousGiven.push(options.previous !== undefined);
    if (this.conflicts > 0) {
      this.conflicts--;
      this.etag++;
      return Promise.reject(new JobqError('conflict', 'etag mismatch'));
    }
    if (etag !== String(this.etag)) return Promise.reject(new JobqError('conflict', 'etag mismatch'));
    this.saves++;
    this.etag++;
    this.runtime = runtime;
    return Promise.resolve({ etag: String(this.etag), rowsError: null });
  }
}

function runtimeOf(definition: object): WorkflowRuntime {
  const parsed = parseWorkflow(JSON.stringify(definition), { filename: 'flow.json' });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return createRuntime(parsed.value, { workflowId: 'wf1', now: NOW, outputsContainer: 'p-outputs' });
}

function context(store: FakeStore, queue: TaskQueue, outputs: Partial<OutputStore> = {}, flushRetryLimit = 2): ApplyContext {
  return {
    store: store as unknown as WorkflowStore,
    outputs: outputs as OutputStore,
    queues: () => queue,
    now: () => NOW,
    log: () => undefined,
    flushRetryLimit,
    signal: new AbortController().signal,
    counters: { conflicts: 0, pushes: 0, pushErrors: 0, overflowBlobs: 0, saves: 0, rowsErrors: 0 },
  };
}

const activate = () => [{ type: 'activate' as const, now: NOW }];

describe('applyEvents', () => {
  it('pushes, then flushes once; a 412 re-reads and re-applies; past the limit it gives up', async () => {
    const store = new FakeStore(runtimeOf({ name: 'x', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] }));
    const queue = new MemoryTaskQueue();
    store.conflicts = 1;
    const ctx = context(store, queue);
    const outcome = await applyEvents(ctx, 'wf1', activate);
    expect(outcome).toMatchObject({ kind: 'applied', saved: true });
    expect(ctx.counters).toMatchObject({ conflicts: 1, saves: 1, pushes: 2 });
    expect(store.runtime?.tasks.a?.status).toBe('running');

    const other = new FakeStore(runtimeOf({ name: 'x', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] }));
    other.conflicts = 3;
    const ctx2 = context(other, new MemoryTaskQueue(), {}, 2);
    expect(await applyEvents(ctx2, 'wf1', activate)).toMatchObject({ kind: 'retry-later' });
    expect(other.saves).toBe(0);
    expect(ctx2.counters.conflicts).toBe(3);
  });

  it('a transient push error aborts before the flush; a permanent one fails the attempt', async () => {
    const def = {
      name: 'x',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    };
    const failing = (error: JobqError): TaskQueue => {
      const queue = new MemoryTaskQueue();
      queue.send = () => Promise.reject(error);
      return queue;
    };
    const transient = new FakeStore(runtimeOf(def));
    expect(await applyEvents(context(transient, failing(new JobqError('unavailable', 'down'))), 'wf1', activate)).toMatchObject({
      kind: 'retry-later',
    });
    expect(transient.saves).toBe(0);

    const permanent = new FakeStore(runtimeOf(def));
    const outcome = await applyEvents(context(permanent, failing(new JobqError('auth', 'no permission'))), 'wf1', activate);
    expect(outcome).toMatchObject({ kind: 'applied', saved: true });
    expect(permanent.runtime?.tasks.a).toMatchObject({ status: 'failed', error: 'could not send the task message: no permission' });
    expect(permanent.runtime?.status).toBe('failed');
  });

  it('moves the upstream refs of a message over the queue limit to the overflow blob', async () => {
    const parents = Array.from({ length: 20 }, (_, i) => `p${i}`);
    const rt = runtimeOf({
      name: 'x',
      tasks: [
        ...parents.map((name) => ({ name, kwargs: { cmd: 'true' } })),
        { name: 'child', depends_on: parents, kwargs: { cmd: 'true' } },
      ],
    });
    const store = new FakeStore(rt);
    const queue = new MemoryTaskQueue({ maxMessageBytes: 4096 });
    const written: unknown[] = [];
    const ctx = context(store, queue, {
      putUpstreamOverflow: (workflowId, taskName, attemptNo, compact) => {
        written.push(compact);
        return Promise.resolve(`p-workflows/upstream/${workflowId}/${taskName}/${attemptNo}.json`);
      },
    });
    await applyEvents(ctx, 'wf1', activate);
    await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 0 }).then((ms) => Promise.all(ms.map((m) => queue.complete(m))));
    const big = '"' + 'v'.repeat(400) + '"';
    const outcome = await applyEvents(ctx, 'wf1', () =>
      parents.map((taskName) => ({
        type: 'completion' as const,
        now: NOW,
        taskName,
        attemptNo: 1,
        success: true,
        outputRef: big,
        error: null,
      })),
    );
    expect(outcome).toMatchObject({ kind: 'applied', saved: true });
    const [message] = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 0 });
    const envelope = decodeEnvelope(message?.body ?? '');
    if (!envelope.ok) throw new Error(envelope.error);
    const task = decodeWorkflowTask(envelope.value.kwargs);
    expect(task.ok && task.value).toMatchObject({
      taskName: 'child',
      upstream: null,
      upstreamBlob: 'p-workflows/upstream/wf1/child/1.json',
    });
    expect(envelope.value.id).toBe('wf1/child/1');
    expect(written).toHaveLength(1);
    expect(ctx.counters.overflowBlobs).toBe(1);
  });

  describe('with a RuntimeCache', () => {
    const def = {
      name: 'x',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    };
    const done = (taskName: string) => () => [
      { type: 'completion' as const, now: NOW, taskName, attemptNo: 1, success: true, outputRef: null, error: null },
    ];

    it('starts the next batch from its own last save instead of reading the blob', async () => {
      const store = new FakeStore(runtimeOf(def));
      const ctx = { ...context(store, new MemoryTaskQueue()), cache: new RuntimeCache() };
      await applyEvents(ctx, 'wf1', activate, { useCache: true });
      expect(store.loads).toBe(1);
      expect(await applyEvents(ctx, 'wf1', done('a'), { useCache: true })).toMatchObject({ kind: 'applied', saved: true });
      expect(store.loads).toBe(1);
      expect(store.runtime?.tasks.b?.status).toBe('running');
      // Without useCache (the sweeps) the blob is read.
      await applyEvents(ctx, 'wf1', () => [], {});
      expect(store.loads).toBe(2);
      // A save after a read from storage writes every task row (a crashed writer may have lost some);
      // a save from the cache writes the rows changed since this coordinator's own last save.
      expect(store.previousGiven).toEqual([false, true]);
    });

    it('a stale entry (the blob changed behind it) fails the save with 412, is dropped, and the blob is read and re-applied', async () => {
      const store = new FakeStore(runtimeOf(def));
      const ctx = { ...context(store, new MemoryTaskQueue()), cache: new RuntimeCache() };
      await applyEvents(ctx, 'wf1', activate, { useCache: true });
      store.etag += 5; // someone else wrote
      expect(await applyEvents(ctx, 'wf1', done('a'), { useCache: true })).toMatchObject({ kind: 'applied', saved: true });
      expect(ctx.counters.conflicts).toBe(1);
      expect(store.loads).toBe(2);
      expect(store.runtime?.tasks.a?.status).toBe('completed');
    });

    it('a batch that changes nothing on a cached runtime is confirmed against the blob before it counts as applied', async () => {
      const store = new FakeStore(runtimeOf(def));
      const ctx = { ...context(store, new MemoryTaskQueue()), cache: new RuntimeCache() };
      await applyEvents(ctx, 'wf1', activate, { useCache: true });
      await applyEvents(ctx, 'wf1', done('a'), { useCache: true });
      const loads = store.loads;
      // A duplicate completion: ignored on the cached runtime, so the blob is read once to be sure.
      expect(await applyEvents(ctx, 'wf1', done('a'), { useCache: true })).toMatchObject({ kind: 'applied', saved: false });
      expect(store.loads).toBe(loads + 1);
    });

    it('keeps at most maxTasks tasks, least recently used out first, but always the workflow saved last', () => {
      const cache = new RuntimeCache(5);
      const two = runtimeOf(def);
      cache.set('w1', { runtime: two, etag: '1' });
      cache.set('w2', { runtime: two, etag: '1' });
      expect(cache.get('w1')).toBeDefined();
      cache.set('w3', { runtime: two, etag: '1' });
      expect(cache.get('w2')).toBeUndefined();
      expect(cache.get('w1')).toBeDefined();
      expect(cache.get('w3')).toBeDefined();
      cache.set('big', {
        runtime: runtimeOf({ name: 'y', tasks: Array.from({ length: 6 }, (_, i) => ({ name: `t${i}`, kwargs: { cmd: 'true' } })) }),
        etag: '1',
      });
      // Larger than the bound alone: kept (alone), or each batch of it would read and rewrite it all.
      expect(cache.get('big')).toBeDefined();
      expect(cache.get('w1')).toBeUndefined();
      expect(cache.get('w3')).toBeUndefined();
      expect(cache.size).toBe(1);
      cache.set('w1', { runtime: two, etag: '2' });
      expect(cache.get('big')).toBeUndefined();
      expect(cache.get('w1')).toMatchObject({ etag: '2' });
      expect(cache.size).toBe(1);
    });
  });

  it('an unknown workflow is missing', async () => {
    expect(await applyEvents(context(new FakeStore(null), new MemoryTaskQueue()), 'nope', activate)).toEqual({ kind: 'missing' });
  });
});
