import { describe, expect, it } from '@jest/globals';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { isJobqError, JobqError } from '@jobq/ports';
import { openWorkflowStore, type TablePipelinePolicy } from '@jobq/store-azure';
import { WorkflowClient } from './index';
import { countRun, failureStack, outcome, useHarness, waitUntil, wrapStore, WrappedQueue, type Stack } from './test-helpers/failure-harness';

// Failure injection (the race conditions and failure modes of SPEC §9 / the seed document): faults are
// injected by wrapping the ports the coordinator and the workers are built from. Every scenario checks
// that nothing is lost (each task completed, the workflow completed) and nothing applied twice (each
// task completed once, at the attempt that was dispatched; duplicate completions counted as ignored).

const h = useHarness();

async function runs(path: string): Promise<number> {
  try {
    return (await readFile(path, 'utf8')).split('\n').filter((line) => line === 'run').length;
  } catch {
    return 0;
  }
}

function total(map: Map<string, number>): number {
  return [...map.values()].reduce((a, b) => a + b, 0);
}

/** Waits until every task message the coordinator pushed has had its completion applied or ignored. */
async function allCompletionsSettled(s: Stack, timeoutInMs = 20_000): Promise<void> {
  const c = s.coordinator.counters;
  await waitUntil(
    () => c.completionsApplied + c.completionsIgnored >= total(s.pushed),
    () => `applied ${c.completionsApplied} + ignored ${c.completionsIgnored} < pushed ${JSON.stringify([...s.pushed])}\n${s.logs.join('\n')}`,
    timeoutInMs,
  );
}

const terminal = (r: WorkflowRuntime) => isTerminalWorkflowStatus(r.status);

describe('Coordinator failure modes', () => {
  it('1. two completions for one workflow in one batch are applied with one flush', async () => {
    let savesOfWorkflow = 0;
    const s = await failureStack(h, {
      coordinatorStore: (store) =>
        wrapStore(store, async (_runtime, _etag, save) => {
          const result = await save();
          savesOfWorkflow++;
          return result;
        }),
    });
    const gate = join(h.work, `gate-${s.prefix}`);
    const cmd = `while [ ! -f '${gate}' ]; do sleep 0.05; done`;
    const workflowId = await s.submit({ name: 'pair', tasks: [{ name: 'a', kwargs: { cmd } }, { name: 'b', kwargs: { cmd } }] });
    await s.waitFor(workflowId, (r) => r.tasks.a?.status === 'running' && r.tasks.b?.status === 'running');
    // Both tasks are held by workers; stop the coordinator, let both complete, then start a new one
    // that finds both completions on the queue at once.
    await s.coordinator.stop();
    await writeFile(gate, '');
    await waitUntil(
      async () => (await s.completions.approximateMessageCount()) >= 2,
      () => 'two completions on the completion queue',
    );
    savesOfWorkflow = 0;
    const second = s.newCoordinator();
    await second.start();
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    // The counters move just after the save the runtime shows.
    await waitUntil(
      () => second.counters.completionsApplied + second.counters.completionsIgnored >= 2,
      () => JSON.stringify(second.counters),
    );
    // One flush for both. (The submit's wake-up may still be on the queue when the first coordinator
    // stops; it arrives in the same or a later batch and changes nothing, so it is not counted here.)
    expect(savesOfWorkflow).toBe(1);
    expect(second.counters).toMatchObject({ completionsApplied: 2, completionsIgnored: 0, saves: 1, conflicts: 0, leftForRedelivery: 0 });
    await waitUntil(
      async () => (await s.completions.approximateMessageCount()) === 0,
      () => 'both completions acked',
    );
  });

  it('2. a concurrent writer makes the flush 412: re-read and re-applied; with flushRetryLimit 0 the messages are left and applied later', async () => {
    // (a) One concurrent write: the coordinator's save of a's completion fails with 412 and converges.
    {
      let injected = 0;
      const s = await failureStack(h, {
        coordinatorStore: (store) =>
          wrapStore(store, async (runtime, _etag, save) => {
            if (injected === 0 && runtime.tasks.a?.status === 'completed') {
              injected++;
              const current = await store.load(runtime.workflowId);
              if (current) await store.save(current.runtime, current.etag); // bumps the ETag
            }
            return save();
          }),
      });
      const marks = join(h.work, `412-${s.prefix}`);
      const done = await s.run({ name: 'cas', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: countRun(marks) } }] });
      expect(done.status).toBe('completed');
      expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
      expect(injected).toBe(1);
      await allCompletionsSettled(s);
      const c = s.coordinator.counters;
      expect(c).toMatchObject({ conflicts: 1, leftForRedelivery: 0, completionsApplied: 2 });
      // The re-apply pushed b's dispatch again (same attempt): the extra run's completion is ignored.
      expect(s.pushed.get('a')).toBe(1);
      expect(s.pushed.get('b')).toBe(2);
      expect(c.completionsIgnored).toBe(1);
      expect(s.logs.some((line) => line.includes('412 on flush, re-reading and re-applying'))).toBe(true);
    }
    // (b) flushRetryLimit 0 and a conflict on the first 2 flushes of a's completion: left twice, then applied.
    {
      let injected = 0;
      const s = await failureStack(h, {
        coordinator: { flushRetryLimit: 0 },
        coordinatorStore: (store) =>
          wrapStore(store, async (runtime, _etag, save) => {
            if (injected < 2 && runtime.tasks.a?.status === 'completed') {
              injected++;
              const current = await store.load(runtime.workflowId);
              if (current) await store.save(current.runtime, current.etag);
            }
            return save();
          }),
      });
      const done = await s.run({ name: 'cas-0', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } }] });
      expect(done.status).toBe('completed');
      expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
      await allCompletionsSettled(s);
      const c = s.coordinator.counters;
      expect(c).toMatchObject({ conflicts: 2, leftForRedelivery: 2, completionsApplied: 2 });
      expect(c.completionsIgnored).toBe(total(s.pushed) - 2);
      expect(s.logs.filter((line) => line.includes('left for redelivery'))).toHaveLength(2);
    }
  }, 40_000);

  it('3. a coordinator "crash" after pushing the children, before the flush: the completion is redelivered, children pushed twice, each task completed once', async () => {
    let crashed = 0;
    const s = await failureStack(h, {
      completionLockInMs: 2_000,
      coordinatorStore: (store) =>
        wrapStore(store, async (runtime, _etag, save) => {
          if (crashed === 0 && runtime.tasks.a?.status === 'completed') {
            crashed++;
            throw new JobqError('internal', 'injected crash before the flush');
          }
          return save();
        }),
    });
    const marks = (name: string) => join(h.work, `crash-${s.prefix}-${name}`);
    const done = await s.run({
      name: 'crash-before-flush',
      tasks: [
        { name: 'a', kwargs: { cmd: countRun(marks('a')) } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: countRun(marks('b')) } },
        { name: 'c', depends_on: ['a'], kwargs: { cmd: countRun(marks('c')) } },
      ],
    });
    expect(crashed).toBe(1);
    expect(done.status).toBe('completed');
    // The lost flush never recorded the children's dispatch, so the re-dispatch is attempt 1 again.
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], c: ['completed', 1] });
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 2, c: 2 });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ completionsApplied: 3, completionsIgnored: 2 });
    expect([await runs(marks('a')), await runs(marks('b')), await runs(marks('c'))]).toEqual([1, 2, 2]);
    expect(s.logs.some((line) => line.includes('injected crash before the flush'))).toBe(true);
  }, 30_000);

  it('4. a worker "crash" after the user code, before the completion: the task message is redelivered and re-run', async () => {
    let failed = 0;
    const s = await failureStack(h, {
      taskLockInMs: 2_000,
      completionSendMaxAttempts: 1,
      workerCompletions: (queue) =>
        new WrappedQueue(queue, {
          send: (_messages, send) => {
            if (failed === 0) {
              failed++;
              return Promise.reject(new JobqError('unavailable', 'injected: the completion queue is down'));
            }
            return send();
          },
        }),
    });
    const marks = join(h.work, `wcrash-${s.prefix}`);
    const done = await s.run({ name: 'worker-crash', tasks: [{ name: 'a', kwargs: { cmd: countRun(marks) } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } }] });
    expect(failed).toBe(1);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    expect(await runs(marks)).toBe(2);
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 1 });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ completionsApplied: 2, completionsIgnored: 0 });
    expect(s.workerLogs.some((line) => line.includes('left for redelivery'))).toBe(true);
  }, 30_000);

  it('5. one task message delivered to two workers: both run it, one completion applied, the other ignored', async () => {
    const s = await failureStack(h, {
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: async (_messages, send) => {
            await send();
            await send();
          },
        }),
    });
    const marks = (name: string) => join(h.work, `dup-${s.prefix}-${name}`);
    const done = await s.run({
      name: 'duplicate-delivery',
      tasks: [
        { name: 'a', kwargs: { cmd: countRun(marks('a')) } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: countRun(marks('b')) } },
      ],
    });
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 2, b: 2 });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ completionsApplied: 2, completionsIgnored: 2 });
    expect([await runs(marks('a')), await runs(marks('b'))]).toEqual([2, 2]);
    const later = await s.store.load(done.workflowId);
    expect(later && outcome(later.runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
  });

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

  it('7. receive errors on the completion queue are logged and the loop goes on', async () => {
    let failures = 0;
    const s = await failureStack(h, {
      coordinatorCompletions: (queue) =>
        new WrappedQueue(queue, {
          receive: (_options, receive) => {
            if (failures < 2) {
              failures++;
              return Promise.reject(new JobqError('unavailable', 'injected receive failure'));
            }
            return receive();
          },
        }),
    });
    const done = await s.run({ name: 'receive-errors', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } }] });
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ receiveErrors: 2, completionsApplied: 2, completionsIgnored: 0 });
    expect(s.logs.filter((line) => line.startsWith('receive failed: unavailable: injected receive failure'))).toHaveLength(2);
  });
});
