import { describe, expect, it } from '@jest/globals';
import { createRuntime, reduce, validateWorkflow, type WorkflowDefinition, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError, isJobqError } from '@jobq/ports';
import { describeWorkflowStoreContract } from '@jobq/ports/testing';
import { MemoryOutputStore } from './output-store';
import { MemoryWorkflowStore } from './workflow-store';

describeWorkflowStoreContract('in memory', () => {
  const store = new MemoryWorkflowStore();
  return Promise.resolve({
    store,
    simulateOrphan: (workflowId: string) => Promise.resolve(store.dropIndexRow(workflowId)),
    dispose: () => Promise.resolve(),
  });
});

const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();

function definition(tasks: number): WorkflowDefinition {
  const result = validateWorkflow({
    name: 'wide',
    tasks: Array.from({ length: tasks }, (_, i) => ({ name: `t${i}`, kwargs: { cmd: 'true' } })),
  });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.value;
}

/** Workflow `id` of {@link definition}(2), activated at 2 and completed at `n`. */
function finished(id: string, n: number): WorkflowRuntime {
  let r = reduce(createRuntime(definition(2), { workflowId: id, now: at(1) }), { type: 'activate', now: at(2) }).runtime;
  for (const taskName of ['t0', 't1'])
    r = reduce(r, { type: 'completion', now: at(n), taskName, attemptNo: 1, success: true, outputRef: null, error: null }).runtime;
  return r;
}

/** Creates workflow `id` and saves it {@link finished} at `n`; returns the ETag of that save. */
async function finishedIn(store: MemoryWorkflowStore, id: string, n: number): Promise<string> {
  const { etag } = await store.create(createRuntime(definition(2), { workflowId: id, now: at(1) }), 'h');
  return (await store.save(finished(id, n), etag)).etag;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isJobqError(error) ? error.code : String(error);
  }
  return undefined;
}

describe('MemoryWorkflowStore specifics', () => {
  it('keeps the saved runtime object (no copy) and writes only the changed task rows', async () => {
    const store = new MemoryWorkflowStore();
    const r0 = createRuntime(definition(1_000), { workflowId: 'wf-big', now: at(1) });
    const { etag } = await store.create(r0, 'h');
    expect(store.calls.taskRowsWritten).toBe(1_000);
    expect((await store.load('wf-big'))?.runtime).toBe(r0);
    const r1 = reduce(r0, { type: 'activate', now: at(2) }).runtime;
    const { etag: e1 } = await store.save(r1, etag, { previous: r0 });
    expect((await store.load('wf-big'))?.runtime).toBe(r1);
    expect(store.calls.taskRowsWritten).toBe(2_000);
    const r2 = reduce(r1, {
      type: 'completion',
      now: at(3),
      taskName: 't7',
      attemptNo: 1,
      success: true,
      outputRef: null,
      error: null,
    }).runtime;
    await store.save(r2, e1, { previous: r1 });
    expect(store.calls.taskRowsWritten).toBe(2_001);
    const rows = await store.listTasks({ workflowId: 'wf-big', status: ['completed'] });
    expect(rows.items).toEqual([
      { workflowId: 'wf-big', taskName: 't7', status: 'completed', queue: 'default', attemptNo: 1, updatedAt: at(3), error: null },
    ]);
    expect(
      (await store.listTasks({ workflowId: 'wf-big', status: ['running'], limit: 5 })).items.map((t) => [t.taskName, t.updatedAt]),
    ).toEqual(['t0', 't1', 't10', 't100', 't101'].map((name) => [name, at(2)]));
  });

  it('lists only the workflows of the asked statuses, paging in id order', async () => {
    const store = new MemoryWorkflowStore();
    const def = definition(2);
    for (let i = 0; i < 50; i++) {
      const r0 = createRuntime(def, { workflowId: `w${String(i).padStart(2, '0')}`, now: at(1) });
      const { etag } = await store.create(r0, 'h');
      if (i % 10 === 0) await store.save(reduce(r0, { type: 'activate', now: at(2) }).runtime, etag, { previous: r0 });
    }
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const page = await store.listWorkflows({ status: ['running'], limit: 2, ...(token ? { continuationToken: token } : {}) });
      ids.push(...page.items.map((w) => w.workflowId));
      token = page.continuationToken ?? undefined;
    } while (token);
    expect(ids).toEqual(['w00', 'w10', 'w20', 'w30', 'w40']);
    expect(await store.countWorkflows()).toMatchObject({ running: 5, pending: 45 });
    expect(await codeOf(store.listWorkflows({ continuationToken: 'garbage' }))).toBe('invalid-argument');
  });

  it('fails a load with corrupt for a runtime made unreadable; a save with its ETag makes it readable again', async () => {
    const store = new MemoryWorkflowStore();
    const r0 = createRuntime(definition(2), { workflowId: 'wf-damaged', now: at(1) });
    await store.create(r0, 'h');
    store.makeUnreadable('wf-damaged', 'not JSON');
    let caught: unknown;
    try {
      await store.load('wf-damaged');
    } catch (error) {
      caught = error;
    }
    expect(isJobqError(caught, 'corrupt')).toBe(true);
    expect((caught as Error).message).toBe('the runtime of workflow "wf-damaged" cannot be read: not JSON');
  });

  it('reports failed row writes as rowsError, and writes every row with the next save', async () => {
    const store = new MemoryWorkflowStore();
    let r: WorkflowRuntime = createRuntime(definition(3), { workflowId: 'wf-rows', now: at(1) });
    let { etag } = await store.create(r, 'h');
    store.rowFault = () => new JobqError('unavailable', 'the table did not answer');
    const r1 = reduce(r, { type: 'activate', now: at(2) }).runtime;
    const saved = await store.save(r1, etag, { previous: r });
    expect(saved.rowsError?.message).toMatch(/was saved, but some of its index\/task rows were not written .*the table did not answer/);
    expect((await store.getWorkflow('wf-rows'))?.status).toBe('pending');
    expect((await store.load('wf-rows'))?.runtime).toBe(r1);
    store.rowFault = null;
    r = r1;
    etag = saved.etag;
    const r2 = reduce(r, {
      type: 'completion',
      now: at(3),
      taskName: 't0',
      attemptNo: 1,
      success: true,
      outputRef: null,
      error: null,
    }).runtime;
    await store.save(r2, etag, { previous: r });
    expect((await store.getWorkflow('wf-rows'))?.status).toBe('running');
    const rows = (await store.listTasks({ workflowId: 'wf-rows' })).items.map((t) => `${t.taskName}:${t.status}`);
    expect(rows).toEqual(['t0:completed', 't1:running', 't2:running']);
  });

  it('loses the lease on request: the holder learns it, and another may take it', async () => {
    const store = new MemoryWorkflowStore();
    const lease = await store.acquireLease();
    expect(await codeOf(store.acquireLease())).toBe('lease-held');
    store.loseLease('injected');
    expect(isJobqError(lease.lost.reason, 'lease-lost')).toBe(true);
    expect((lease.lost.reason as Error).message).toMatch(/injected/);
    const next = await store.acquireLease();
    await lease.release(); // quietly: it is not the holder any more
    expect(await codeOf(store.acquireLease())).toBe('lease-held');
    await next.release();
  });

  it('purges the overflow blobs of its stateBlobs with the runtime, never those of a.b; a save after a purge is a conflict', async () => {
    const outputs = new MemoryOutputStore();
    const store = new MemoryWorkflowStore({ stateBlobs: outputs });
    const etags = new Map<string, string>();
    for (const id of ['a', 'a.b']) {
      etags.set(id, await finishedIn(store, id, 5));
      await outputs.putUpstreamOverflow(id, 't1', 1, { n: ['t0'] });
      await outputs.putUpstreamOverflow(id, 't1', 2, { n: ['t0'] });
      await outputs.putOutput(id, 't0', 1, JSON.stringify({ pad: 'x'.repeat(40_000) }));
    }
    expect(outputs.blobCount).toBe(6);
    const result = await store.purge('a', { beforeIndexRow: async () => void (await outputs.deleteWorkflowOutputs('a')) });
    expect(result).toEqual({
      workflowId: 'a',
      outcome: 'purged',
      status: 'completed',
      finishedAt: at(5),
      reason: null,
      blobs: 3,
      taskRows: 2,
    });
    expect(outputs.blobCount).toBe(3);
    expect(await outputs.getUpstreamOverflow('memory-workflows/upstream/a.b/t1/2.json')).toEqual({ n: ['t0'] });
    expect(await codeOf(outputs.getUpstreamOverflow('memory-workflows/upstream/a/t1/2.json'))).toBe('not-found');
    expect(await codeOf(store.save(finished('a', 6), etags.get('a')!))).toBe('conflict');
    expect(await store.load('a')).toBeNull();
    expect(store.calls.purges).toBe(1);
    // Without stateBlobs the runtime is the only blob.
    const alone = new MemoryWorkflowStore();
    await finishedIn(alone, 'c', 5);
    expect(await alone.purge('c')).toMatchObject({ outcome: 'purged', blobs: 1, taskRows: 2 });
  });

  it('skips a runtime that cannot be read until it is set aside as corrupt, then purges it', async () => {
    const store = new MemoryWorkflowStore();
    await finishedIn(store, 'bad', 5);
    store.makeUnreadable('bad', 'not JSON');
    const skipped = await store.purge('bad');
    expect(skipped).toMatchObject({ outcome: 'skipped', status: 'completed' });
    expect(skipped.reason).toMatch(/cannot be read and the coordinator has not set it aside as corrupt .*not JSON/);
    await store.markCorrupt('bad', 'not JSON', at(7));
    expect(await store.purge('bad', { dryRun: true })).toMatchObject({
      outcome: 'would-purge',
      status: 'corrupt',
      finishedAt: at(7),
      taskRows: 2,
    });
    expect(await store.purge('bad')).toMatchObject({ outcome: 'purged', status: 'corrupt', blobs: 1, taskRows: 2 });
    expect(store.workflowIds()).toEqual([]);
    expect(await store.countWorkflows()).toMatchObject({ corrupt: 0, completed: 0 });
  });

  it('pages a finished-before listing while purging what it lists (the retention sweep), and leaves the rest', async () => {
    const store = new MemoryWorkflowStore();
    const def = definition(2);
    for (let i = 0; i < 30; i++) {
      const id = `w${String(i).padStart(2, '0')}`;
      if (i % 3 === 0) {
        const r0 = createRuntime(def, { workflowId: id, now: at(1) });
        await store.save(reduce(r0, { type: 'activate', now: at(2) }).runtime, (await store.create(r0, 'h')).etag);
      } else {
        await finishedIn(store, id, i % 3 === 1 ? 5 : 50);
      }
    }
    const purged: string[] = [];
    let token: string | undefined;
    do {
      const page = await store.listWorkflows({ finishedBefore: at(10), limit: 3, ...(token ? { continuationToken: token } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(3);
      for (const summary of page.items) {
        expect((await store.purge(summary.workflowId, { finishedBefore: at(10) })).outcome).toBe('purged');
        purged.push(summary.workflowId);
      }
      token = page.continuationToken ?? undefined;
    } while (token);
    expect(purged).toEqual(Array.from({ length: 10 }, (_, k) => `w${String(3 * k + 1).padStart(2, '0')}`));
    expect(await store.countWorkflows()).toMatchObject({ running: 10, completed: 10 });
    expect((await store.listWorkflows({ finishedBefore: at(10) })).items).toEqual([]);
    // Two groups in one listing, merged in key order, one per page.
    const ids: string[] = [];
    token = undefined;
    do {
      const page = await store.listWorkflows({
        savedStatus: ['running', 'completed'],
        updatedBefore: at(60),
        limit: 1,
        ...(token ? { continuationToken: token } : {}),
      });
      ids.push(...page.items.map((w) => w.workflowId));
      token = page.continuationToken ?? undefined;
    } while (token);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toHaveLength(20);
  });

  it('honours a fired abort signal', async () => {
    const store = new MemoryWorkflowStore();
    const controller = new AbortController();
    controller.abort();
    expect(await codeOf(store.load('x', { abortSignal: controller.signal }))).toBe('aborted');
    expect(await codeOf(store.listWorkflows({ abortSignal: controller.signal }))).toBe('aborted');
  });
});
