import { describe, expect, it } from '@jest/globals';
import { encodeCompletion, taskState, withTaskStates } from '@jobq/dag-core';
import { isJobqError, JobqError, type WorkflowStore } from '@jobq/ports';
import { failureStack, useHarness, waitUntil, wrapStore, type Stack } from './test-helpers/failure-harness';

// Workflows the coordinator cannot process, and messages it cannot apply: each is set aside with its
// reason (a corrupt workflow, a dead-lettered message) while the coordinator goes on with the rest;
// nothing loops forever.

const h = useHarness();

const SIMPLE = { name: 'simple', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] };

/** Bodies of the dead-letter queue of the completion queue (created by the first dead letter). */
async function deadLetters(s: Stack): Promise<string[]> {
  try {
    return (await s.completions.deadLetterQueue().peek(32)).map((m) => m.body);
  } catch (error) {
    if (isJobqError(error, 'not-found')) return [];
    throw error;
  }
}

/** Saves a runtime blob that no longer decodes: a task state holds a negative attempt number. */
async function damageRuntimeBlob(s: Stack, workflowId: string): Promise<void> {
  const loaded = await s.store.load(workflowId);
  const runtime = loaded!.runtime;
  await s.store.save(withTaskStates(runtime, [['a', { ...taskState(runtime, 'a')!, attemptNo: -1 }]]), loaded!.etag);
}

describe('Coordinator: corrupt workflows and undeliverable messages', () => {
  it('a runtime blob that does not decode: the workflow is marked corrupt on its index row, its messages go to the dead-letter queue, the others run on', async () => {
    const s = await failureStack(h, { start: false });
    const bad = await s.submit(SIMPLE, { id: 'wf-bad-blob' });
    await damageRuntimeBlob(s, bad);
    await s.coordinator.start();
    const good = await s.run(SIMPLE);
    expect(good.status).toBe('completed');
    await waitUntil(async () => (await s.store.getWorkflow(bad))?.status === 'corrupt', () => s.logs.join('\n'));
    const row = await s.store.getWorkflow(bad);
    expect(row?.error).toBe('corrupt: the runtime of workflow "wf-bad-blob" cannot be read: tasks["a"]."attempt_no" must be a count, got -1');
    // Its wake-up is in the dead-letter queue with the reason; a later completion for it follows.
    await waitUntil(async () => (await deadLetters(s)).length >= 1, () => s.logs.join('\n'));
    await s.completions.send({ body: encodeCompletion({ workflowId: bad, taskName: 'a', attemptNo: 1, success: true, outputRef: null, error: null }) });
    await waitUntil(async () => (await deadLetters(s)).length >= 2, () => s.logs.join('\n'));
    for (const body of await deadLetters(s)) expect(body).toContain('wf-bad-blob');
    expect(s.coordinator.counters.deadLettered).toBe(2);
    expect(s.coordinator.counters.corruptWorkflows).toBeGreaterThanOrEqual(1);
    // Set aside for good: the request scans no longer visit it, retry and cancel refuse it.
    expect((await s.client.list({ status: ['pending', 'running', 'cancelling'] })).items.map((w) => w.workflowId)).not.toContain(bad);
    expect((await s.client.retry(bad)).message).toMatch(/is corrupt \(the runtime of workflow "wf-bad-blob" cannot be read: tasks\["a"\]\."attempt_no" must be a count, got -1\): the coordinator set it aside/);
    expect((await s.client.cancel(bad)).requested).toBe(false);
    await expect(s.client.explain(bad)).rejects.toThrow(/is corrupt/);
  }, 60_000);

  it('an event the reducer cannot apply: the runtime is saved as corrupt with the reason and takes no more events', async () => {
    const s = await failureStack(h, { start: false });
    const id = await s.submit(SIMPLE, { id: 'wf-throws' });
    // A stored attempt at the largest safe integer: dispatching the next one cannot be encoded.
    const loaded = await s.store.load(id);
    const runtime = loaded!.runtime;
    const broken = withTaskStates(runtime, [['a', { ...taskState(runtime, 'a')!, attemptNo: Number.MAX_SAFE_INTEGER }]]);
    await s.store.save(broken, loaded!.etag);
    await s.coordinator.start();
    const corrupt = await s.waitFor(id, (r) => r.status === 'corrupt');
    expect(corrupt.corruptReason).toMatch(/^the reducer threw RangeError: task message: attempt number must be an integer ≥ 1/);
    expect(s.pushed.size).toBe(0);
    expect((await s.store.getWorkflow(id))?.status).toBe('corrupt');
    const report = await s.client.retry(id);
    expect(report).toMatchObject({ requested: false });
    // Later messages are not applied: they go to the dead-letter queue with the reason.
    await s.completions.send({ body: encodeCompletion({ workflowId: id, taskName: 'a', attemptNo: 1, success: true, outputRef: null, error: null }) });
    await waitUntil(async () => (await deadLetters(s)).length >= 2, () => s.logs.join('\n'));
    expect((await s.store.load(id))?.runtime.status).toBe('corrupt');
    expect(s.coordinator.counters.corruptWorkflows).toBe(1);
  }, 60_000);

  it('a message that keeps failing for a reason other than an outage goes to the dead-letter queue after maxDeliveries; outages never count', async () => {
    let failWith: JobqError | null = null;
    const s = await failureStack(h, {
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
    await waitUntil(() => s.logs.filter((l) => l.includes('wf-outage') && l.includes('could not be reached')).length >= 4, () => s.logs.join('\n'), 30_000);
    expect(await deadLetters(s)).toEqual([]);
    // A permanent error: after 3 deliveries the message is dead-lettered with the reason.
    failWith = new JobqError('invalid-argument', 'read the index row failed: bad request (InvalidInput)');
    await waitUntil(async () => (await deadLetters(s)).length >= 1, () => s.logs.join('\n'), 30_000);
    const [body] = await deadLetters(s);
    expect(body).toContain('wf-outage');
    expect(s.logs.join('\n')).toMatch(/moved to the dead-letter queue: delivered 3 times without being applied: processing workflow wf-outage failed: invalid-argument: read the index row failed: bad request/);
    failWith = null;
    expect(outage).toBe('wf-outage');
  }, 60_000);
});
