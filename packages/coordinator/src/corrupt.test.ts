import { describe, expect, it } from '@jest/globals';
import { taskState, withTaskStates } from '@jobq/dag-core';
import { encodeCompletion } from '@jobq/dag-core/wire';
import { isJobqError } from '@jobq/ports';
import { accountClients } from '@jobq/store-azure';
import { failureStack, useHarness, waitUntil, type Stack } from './test-helpers/failure-harness';

// Workflows the coordinator cannot process, and messages it cannot apply: each is set aside with its
// reason (a corrupt workflow, a dead-lettered message) while the coordinator goes on with the rest;
// nothing loops forever. The delivery bound of messages that keep failing: corrupt.memory.test.ts.

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

/** Damages the stored runtime so that it no longer decodes: its log gets a record for a task its definition does not have. */
async function damageRuntimeBlob(s: Stack, workflowId: string): Promise<void> {
  const container = accountClients({ connectionString: h.azurite.connectionString }, { operationTimeoutInMs: 10_000 }).container(
    s.store.names.workflowsContainer,
  );
  const head = JSON.parse((await container.getBlobClient(`${workflowId}.json`).downloadToBuffer()).toString('utf8')) as { log: string };
  const record = '{"seq":1,"tasks":{"stray":{"status":"ready"}}}\n';
  await container.getAppendBlobClient(head.log).appendBlock(record, record.length);
}

describe('Coordinator: corrupt workflows and undeliverable messages', () => {
  it('a runtime blob that does not decode: the workflow is marked corrupt on its index row, its messages go to the dead-letter queue, the others run on', async () => {
    const s = await failureStack(h, { start: false });
    const bad = await s.submit(SIMPLE, { id: 'wf-bad-blob' });
    await damageRuntimeBlob(s, bad);
    await s.coordinator.start();
    const good = await s.run(SIMPLE);
    expect(good.status).toBe('completed');
    await waitUntil(
      async () => (await s.store.getWorkflow(bad))?.status === 'corrupt',
      () => s.logs.join('\n'),
    );
    const row = await s.store.getWorkflow(bad);
    expect(row?.error).toBe(
      'corrupt: the runtime of workflow "wf-bad-blob" cannot be read: runtime log: record 1 names a task the definition does not have',
    );
    // Its wake-up is in the dead-letter queue with the reason; a later completion for it follows.
    await waitUntil(
      async () => (await deadLetters(s)).length >= 1,
      () => s.logs.join('\n'),
    );
    await s.completions.send({
      body: encodeCompletion({ workflowId: bad, taskName: 'a', attemptNo: 1, success: true, outputRef: null, error: null }),
    });
    await waitUntil(
      async () => (await deadLetters(s)).length >= 2,
      () => s.logs.join('\n'),
    );
    for (const body of await deadLetters(s)) expect(body).toContain('wf-bad-blob');
    expect(s.coordinator.counters.deadLettered).toBe(2);
    expect(s.coordinator.counters.corruptWorkflows).toBeGreaterThanOrEqual(1);
    // Set aside for good: the request scans no longer visit it, retry and cancel refuse it.
    expect((await s.client.list({ status: ['pending', 'running', 'cancelling'] })).items.map((w) => w.workflowId)).not.toContain(bad);
    expect((await s.client.retry(bad)).message).toMatch(
      /is corrupt \(the runtime of workflow "wf-bad-blob" cannot be read: runtime log: record 1 names a task the definition does not have\): the coordinator set it aside/,
    );
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
    // The index row follows the runtime (the save writes it right after).
    await waitUntil(
      async () => (await s.store.getWorkflow(id))?.status === 'corrupt',
      () => s.logs.join('\n'),
    );
    const report = await s.client.retry(id);
    expect(report).toMatchObject({ requested: false });
    // Later messages are not applied: they go to the dead-letter queue with the reason.
    await s.completions.send({
      body: encodeCompletion({ workflowId: id, taskName: 'a', attemptNo: 1, success: true, outputRef: null, error: null }),
    });
    await waitUntil(
      async () => (await deadLetters(s)).length >= 2,
      () => s.logs.join('\n'),
    );
    expect((await s.store.load(id))?.runtime.status).toBe('corrupt');
    expect(s.coordinator.counters.corruptWorkflows).toBe(1);
  }, 60_000);
});
