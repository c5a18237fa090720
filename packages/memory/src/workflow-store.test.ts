import { describe, expect, it } from '@jest/globals';
import { createRuntime, reduce, validateWorkflow, type WorkflowDefinition, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError, isJobqError } from '@jobq/ports';
import { describeWorkflowStoreContract } from '@jobq/ports/testing';
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
  const result = validateWorkflow({ name: 'wide', tasks: Array.from({ length: tasks }, (_, i) => ({ name: `t${i}`, kwargs: { cmd: 'true' } })) });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.value;
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
    const r2 = reduce(r1, { type: 'completion', now: at(3), taskName: 't7', attemptNo: 1, success: true, outputRef: null, error: null }).runtime;
    await store.save(r2, e1, { previous: r1 });
    expect(store.calls.taskRowsWritten).toBe(2_001);
    const rows = await store.listTasks({ workflowId: 'wf-big', status: ['completed'] });
    expect(rows.items).toEqual([{ workflowId: 'wf-big', taskName: 't7', status: 'completed', queue: 'default', attemptNo: 1, updatedAt: at(3), error: null }]);
    expect((await store.listTasks({ workflowId: 'wf-big', status: ['running'], limit: 5 })).items.map((t) => [t.taskName, t.updatedAt])).toEqual(
      ['t0', 't1', 't10', 't100', 't101'].map((name) => [name, at(2)]),
    );
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
    const r2 = reduce(r, { type: 'completion', now: at(3), taskName: 't0', attemptNo: 1, success: true, outputRef: null, error: null }).runtime;
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

  it('honours a fired abort signal', async () => {
    const store = new MemoryWorkflowStore();
    const controller = new AbortController();
    controller.abort();
    expect(await codeOf(store.load('x', { abortSignal: controller.signal }))).toBe('aborted');
    expect(await codeOf(store.listWorkflows({ abortSignal: controller.signal }))).toBe('aborted');
  });
});
