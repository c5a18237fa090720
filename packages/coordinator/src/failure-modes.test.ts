import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { isJobqError } from '@jobq/ports';
import { openWorkflowStore, type TablePipelinePolicy } from '@jobq/store-azure';
import { WorkflowClient } from './index';
import { failureStack, outcome, useHarness } from './test-helpers/failure-harness';

// Failure injection that needs the Azure store itself: a fault inside its table pipeline. The other
// failure modes (SPEC §9 / the seed document) check the coordinator's logic and run on the
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
        if (request.method !== 'GET' && request.url.includes(indexRow)) return Promise.reject(new Error('injected crash before the index row'));
        return next(request);
      },
    };
    const crashing = await openWorkflowStore({ connection, prefix: s.prefix, createIfMissing: false, tablePolicies: [crashIndexWrites] });
    const crashingClient = new WorkflowClient({ store: crashing, completions: s.completions, outputsContainer: s.store.names.outputsContainer });
    const definition = { name: 'heal', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } }] };
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
    expect((await s.store.getWorkflow(workflowId))?.status).toBe('completed');

    let error: unknown;
    try {
      await s.client.submit({ text: JSON.stringify({ ...definition, tasks: [{ name: 'other', kwargs: { cmd: 'true' } }] }), filename: 'flow.json' }, { id: workflowId });
    } catch (e) {
      error = e;
    }
    expect(isJobqError(error, 'conflict')).toBe(true);
    const unchanged = await s.store.load(workflowId);
    expect(unchanged && outcome(unchanged.runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
  });
});
