import { describe, expect, it } from '@jest/globals';
import { createRuntime, isTerminalWorkflowStatus, reduce, validateWorkflow } from '@jobq/dag-core';
import { isJobqError, type ReceiveOptions, type ReceivedMessage, type WorkflowStore } from '@jobq/ports';
import { openStorageQueue } from '@jobq/queue-storage';
import { openOutputStore, openWorkflowStore, type TablePipelinePolicy } from '@jobq/store-azure';
import { Coordinator, finishedWorkflows, purgeWorkflow } from './index';
import { failureStack, waitUntil, WrappedQueue } from './test-helpers/failure-harness';
import { openStack, useHarness } from './test-helpers/stack';

// The coordinator's periodic scans: what they cost in table requests on a big index, and the
// retention sweep that purges finished workflows.

const h = useHarness();

function at(n: number): string {
  return new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
}

let prefixes = 0;

/** Runs `work(i)` for i < n, `concurrency` at a time. */
async function parallel(n: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

const ONE_TASK = (() => {
  const checked = validateWorkflow({ name: 'seeded', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] });
  if (!checked.ok) throw new Error('bad definition');
  return checked.value;
})();

/**
 * An index of `total` workflows: `active` running since at(2) (real runtimes, their task running
 * and not overdue), the rest finished at at(2) (index rows set aside as corrupt: no runtime).
 */
async function seedIndex(store: WorkflowStore, total: number, active: number): Promise<void> {
  await parallel(total, 32, async (i) => {
    const id = `seeded-${String(i).padStart(5, '0')}`;
    if (i >= active) {
      await store.markCorrupt(id, 'seeded as finished', at(2));
      return;
    }
    const r0 = createRuntime(ONE_TASK, { workflowId: id, now: at(1) });
    const { etag } = await store.create(r0, 'h');
    await store.save(reduce(r0, { type: 'activate', now: at(2) }).runtime, etag, { previous: r0 });
  });
}

describe('the cost of the coordinator scans', () => {
  for (const active of [0, 120]) {
    it(`one round of every scan over 3 000 index rows with ${active} active, pages of 100: one request per page of matches of each query, no finished row read`, async () => {
      let tableRequests = 0;
      const counter: TablePipelinePolicy = {
        name: 'test-table-counter',
        sendRequest: (request, next) => {
          tableRequests++;
          return next(request);
        },
      };
      const connection = { connectionString: h.azurite.connectionString };
      const prefix = `Sc${process.pid}x${Date.now().toString(36)}x${++prefixes}`;
      // A generous limit per request: seeding 3 000 rows 32 at a time can keep Azurite busy for
      // seconds on a loaded machine, and what is counted below is requests, not time.
      const store = await openWorkflowStore({ connection, prefix, operationTimeoutInMs: 60_000, tablePolicies: [counter] });
      h.dispose(() => store.deleteStorage());
      const outputs = await openOutputStore({ connection, prefix });
      const queue = await openStorageQueue({ connection, queueName: store.names.completionQueue, lockDurationInMs: 5_000 });
      h.dispose(() => queue.deleteQueue());
      await seedIndex(store, 3_000, active);

      // Every sweep is due at once; the request scan and the retention sweep run first thing anyway.
      // The first receive comes after one round of all of them: count the table requests until then.
      let counted: number | null = null;
      const firstReceive = new Promise<void>((resolve) => {
        const completions = new WrappedQueue(queue, {
          receive: (options: ReceiveOptions, receive: () => Promise<ReceivedMessage[]>) => {
            counted ??= tableRequests;
            resolve();
            return receive();
          },
        });
        const coordinator = new Coordinator({
          store,
          completions,
          outputs,
          queues: () => {
            throw new Error('no task queue in this test');
          },
          options: {
            now: () => new Date(Date.UTC(2026, 0, 1, 1)), // an hour after the seeded rows
            cancelPollIntervalInMs: 3_600_000,
            timeoutSweepIntervalInMs: 0,
            readySweepIntervalInMs: 0,
            readyRepairThresholdInMs: 60_000,
            retentionInMs: 2 * 3_600_000, // nothing finished that long ago
            statsIntervalInMs: 3_600_000,
            receiveWaitInMs: 50,
            scanPageSize: 100, // the paging of 1 000-row pages, with fewer workflows to seed
            log: () => undefined,
          },
        });
        h.dispose(() => coordinator.stop());
        tableRequests = 0;
        void coordinator.start();
      });
      await firstReceive;
      // Requests (1), never-activated (1), re-run records (1), lost-task sweep and ready-repair (one
      // per started page of running rows each), retention (1), and the first page of the start-up
      // resync of task rows (1; it reads 16 workflows per turn): 7 on an idle deployment whatever
      // the size of the index.
      const perSweep = Math.max(1, Math.ceil(active / 100));
      expect(counted).toBe(5 + 2 * perSweep);
    }, 60_000);
  }
});

describe('requests on the index row only', () => {
  it('a cancel recorded before request rows existed (on the index row alone) is applied by the lost-task sweep', async () => {
    const s = await failureStack(h);
    const workflowId = await s.submit({ name: 'slow', tasks: [{ name: 'sleep', kwargs: { cmd: 'sleep 20' } }] });
    await s.waitFor(workflowId, (r) => r.status === 'running');
    // No worker (none sees the cancel and stops the task) and no coordinator while the request is recorded.
    await s.worker.stop();
    await s.coordinator.stop();
    await s.store.requestCancel(workflowId, new Date().toISOString());
    for (const request of (await s.store.listRequests()).items)
      expect(await s.store.clearRequest(request.workflowId, request.etag)).toBe(true);
    const next = s.newCoordinator({ cancelPollIntervalInMs: 200, timeoutSweepIntervalInMs: 200 });
    await next.start();
    const cancelling = await s.waitFor(workflowId, (r) => r.cancelRequested, 10_000);
    expect(cancelling.status).toBe('cancelling');
    // The counter moves once the save returns, which the poll above may see first.
    await waitUntil(
      () => next.counters.requestsApplied >= 1,
      () => `requests applied: ${next.counters.requestsApplied}`,
    );
    expect(next.counters.requestsApplied).toBe(1);
  }, 40_000);
});

describe('retention', () => {
  const big = `node -e 'require("fs").writeFileSync(process.env.JOBQ_OUTPUT_FILE, JSON.stringify({ pad: "p".repeat(40 * 1024) }))'`;

  it('--retention purges finished workflows (outputs included) a bounded number per sweep, never a running one', async () => {
    const s = await openStack(h);
    const finished: string[] = [];
    for (let i = 0; i < 3; i++) {
      const done = await s.run({
        name: `old-${i}`,
        tasks: [
          { name: 'make', kwargs: { cmd: big } },
          { name: 'after', depends_on: ['make'], kwargs: { cmd: i === 2 ? 'exit 1' : 'true' } },
        ],
      });
      expect(isTerminalWorkflowStatus(done.status)).toBe(true);
      finished.push(done.workflowId);
    }
    const firstRef = (await s.store.load(finished[0]!))?.runtime.tasks.make?.outputRef ?? null;
    expect(firstRef).toMatch(/^blob:/);
    const running = await s.submit({ name: 'slow', tasks: [{ name: 'sleep', kwargs: { cmd: 'sleep 20' } }] });
    await s.waitFor(running, (r) => r.status === 'running');
    await s.coordinator.stop();

    const keeper = s.newCoordinator({ retentionInMs: 1, retentionSweepIntervalInMs: 200, retentionMaxPerSweep: 2 });
    await keeper.start();
    const deadline = Date.now() + 15_000;
    while (keeper.counters.purged < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(keeper.counters.purged).toBe(3);
    for (const id of finished) {
      expect(await s.store.getWorkflow(id)).toBeNull();
      expect(await s.store.load(id)).toBeNull();
      expect((await s.store.listTasks({ workflowId: id })).items).toEqual([]);
    }
    const gone = await s.outputs.getOutput(firstRef).then(
      () => 'still there',
      (error: unknown) => (isJobqError(error, 'not-found') ? 'gone' : String(error)),
    );
    expect(gone).toBe('gone');
    expect((await s.store.load(running))?.runtime.status).toBe('running');
    const purgedLines = s.logs.filter((line) => / purged \(/.test(line));
    expect(purgedLines).toHaveLength(3);
    expect(purgedLines[0]).toMatch(/blob\(s\), 2 task row\(s\)$/);
    // Two per sweep: the first sweep stopped after two.
    const firstSweep = s.logs.findIndex((line) => / purged \(/.test(line));
    expect(s.logs.slice(firstSweep, firstSweep + 2).every((line) => / purged \(/.test(line))).toBe(true);
    await keeper.stop();
    expect((await s.store.readCoordinatorStats())?.purged).toBe(3);
  }, 60_000);

  it('purgeWorkflow and finishedWorkflows: a dry run deletes nothing; a running workflow is refused', async () => {
    const s = await openStack(h);
    const done = await s.run({ name: 'done', tasks: [{ name: 'make', kwargs: { cmd: big } }] });
    const running = await s.submit({ name: 'slow', tasks: [{ name: 'sleep', kwargs: { cmd: 'sleep 20' } }] });
    await s.waitFor(running, (r) => r.status === 'running');
    const cutoff = new Date(Date.now() + 1_000).toISOString();
    const found: string[] = [];
    for await (const summary of finishedWorkflows(s.store, cutoff)) found.push(summary.workflowId);
    expect(found).toEqual([done.workflowId]);
    const dry = await purgeWorkflow(s.store, s.outputs, done.workflowId, { dryRun: true, finishedBefore: cutoff });
    expect(dry).toMatchObject({ outcome: 'would-purge', status: 'completed', outputBlobs: 0, blobs: 0, taskRows: 1 });
    expect(await s.store.load(done.workflowId)).not.toBeNull();
    expect(await purgeWorkflow(s.store, s.outputs, running)).toMatchObject({ outcome: 'skipped', status: 'running', outputBlobs: 0 });
    expect((await s.store.load(running))?.runtime.status).toBe('running');
    expect(await purgeWorkflow(s.store, s.outputs, done.workflowId, { finishedBefore: cutoff })).toMatchObject({
      outcome: 'purged',
      outputBlobs: 1,
      blobs: 4,
      taskRows: 1,
    }); // head, definition, snapshot, log
    expect(await s.store.getWorkflow(done.workflowId)).toBeNull();
  }, 60_000);
});
