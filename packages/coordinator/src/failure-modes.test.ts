import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { isJobqError } from '@jobq/ports';
import { openWorkflowStore, type TablePipelinePolicy } from '@jobq/store-azure';
import { WorkflowClient } from './index';
import { failureStack, outcome, useHarness, waitUntil, WrappedQueue } from './test-helpers/failure-harness';
import { join } from 'node:path';

// Failure injection that needs the Azure store itself: a fault inside its table pipeline, request
// rows found by the scan of the Azure index. The other
// failure modes (docs/failure-model.md) check the coordinator's logic and run on the
// in-memory adapters and a virtual clock: failure-modes.memory.test.ts.

const h = useHarness();

const terminal = (r: WorkflowRuntime) => isTerminalWorkflowStatus(r.status);

describe('Coordinator failure modes (Azurite)', () => {
  it('6. a submit that crashed between the blob and the index row heals on resubmission; a different definition is a conflict', async () => {
    const s = await failureStack(h);
    const connection = { connectionString: h.azurite.connectionString };
    const indexRow = `/${s.store.names.indexTable}(`;
    const crashIndexWrites: TablePipelinePolicy = {
      name: 'test-crash-before-index-row',
      sendRequest: (request, next) => {
        if (request.method !== 'GET' && request.url.includes(indexRow))
          return Promise.reject(new Error('injected crash before the index row'));
        return next(request);
      },
    };
    const crashing = await openWorkflowStore({ connection, prefix: s.prefix, createIfMissing: false, tablePolicies: [crashIndexWrites] });
    const crashingClient = new WorkflowClient({
      store: crashing,
      completions: s.completions,
      outputsContainer: s.store.names.outputsContainer,
    });
    const definition = {
      name: 'heal',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    };
    const workflowId = 'heal-me-1';
    await expect(crashingClient.submit({ text: JSON.stringify(definition), filename: 'flow.json' }, { id: workflowId })).rejects.toThrow();
    expect(await s.store.load(workflowId)).not.toBeNull();
    expect(await s.store.getWorkflow(workflowId)).toBeNull();

    const again = await s.client.submit({ text: JSON.stringify(definition), filename: 'flow.json' }, { id: workflowId });
    expect(again.created).toBe(true);
    expect((await s.store.getWorkflow(workflowId))?.workflowId).toBe(workflowId);
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    // The finishing save writes the runtime, then the task rows, then the index row: it follows.
    await waitUntil(
      async () => (await s.store.getWorkflow(workflowId))?.status === 'completed',
      () => 'the index row never said completed',
      5_000,
    );

    let error: unknown;
    try {
      await s.client.submit(
        { text: JSON.stringify({ ...definition, tasks: [{ name: 'other', kwargs: { cmd: 'true' } }] }), filename: 'flow.json' },
        { id: workflowId },
      );
    } catch (e) {
      error = e;
    }
    expect(isJobqError(error, 'conflict')).toBe(true);
    const unchanged = await s.store.load(workflowId);
    expect(unchanged && outcome(unchanged.runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
  });

  it('13. the wake-up of a retry on a failed workflow is lost: the request scan finds its request row, applies the retry and clears the row', async () => {
    const s = await failureStack(h);
    const marker = join(h.work, `lost-retry-${s.prefix}`);
    // Fails the first time, succeeds after.
    const flaky = `test -f '${marker}' || { touch '${marker}'; exit 3; }`;
    const failed = await s.run({
      name: 'lost-retry-wakeup',
      tasks: [
        { name: 'a', kwargs: { cmd: flaky } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(failed.status).toBe('failed');
    await waitUntil(
      async () => (await s.store.getWorkflow(failed.workflowId))?.status === 'failed',
      () => 'the index row never said failed',
      5_000,
    );
    const wakeups = s.coordinator.counters.wakeups;
    // A client whose wake-ups never reach the queue.
    let lost = 0;
    const lossy = new WorkflowClient({
      store: s.store,
      completions: new WrappedQueue(s.completions, {
        send: () => {
          lost++;
          return Promise.resolve();
        },
      }),
      outputsContainer: s.store.names.outputsContainer,
    });
    expect(await lossy.retry(failed.workflowId)).toEqual({ requested: true });
    expect(lost).toBe(1);
    const done = await s.waitFor(failed.workflowId, (r) => r.status === 'completed');
    expect(outcome(done)).toEqual({ a: ['completed', 2], b: ['completed', 1] });
    expect(s.coordinator.counters.wakeups).toBe(wakeups); // no wake-up arrived: the scan did it
    expect(s.coordinator.counters.requestsApplied).toBe(1);
    await waitUntil(
      async () => (await s.store.listRequests()).items.length === 0,
      () => `the request row of ${failed.workflowId} is still there\n${s.logs.join('\n')}`,
      5_000,
    );
    expect(await s.store.getWorkflow(failed.workflowId)).toMatchObject({ status: 'completed', retryAppliedAt: expect.any(String) });
  }, 30_000);
});
