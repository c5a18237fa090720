import { afterEach, describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, shardOf, type WorkflowRuntime } from '@jobq/dag-core';
import { decodeCoordinatorMessage } from '@jobq/dag-core/wire';
import {
  isJobqError,
  JobqError,
  VirtualClock,
  type CoordinatorLease,
  type ShardCount,
  type WorkflowFilter,
  type WorkflowStore,
} from '@jobq/ports';
import { WorkflowClient } from './index';
import { useMemoryStacks, type MemoryStack, type MemoryStackOptions } from './test-helpers/memory-stack';
import { outcome, taskNameOf, wrapStore, WrappedQueue } from './test-helpers/wrappers';

// Failure injection (the race conditions and failure modes of docs/failure-model.md) on the
// in-memory adapters and a virtual clock: faults are injected by wrapping the ports the coordinator
// and the workers are built from; locks, sweeps, scans and back-offs run in virtual time, so no test
// waits for them. Every scenario checks that nothing is lost (each task completed, the workflow
// completed) and nothing applied twice (each task completed once, at the attempt that was
// dispatched; duplicate completions counted as ignored). Failure mode 6 (a submit that crashed
// between the runtime and the index row) needs the Azure store's table pipeline: failure-modes.test.ts.

const stacks = useMemoryStacks();

function total(map: Map<string, number>): number {
  return [...map.values()].reduce((a, b) => a + b, 0);
}

/** Runs until every task message the coordinator pushed has had its completion applied or ignored. */
async function allCompletionsSettled(s: MemoryStack): Promise<void> {
  const c = s.coordinator.counters;
  await s.until(
    () => c.completionsApplied + c.completionsIgnored >= total(s.pushed),
    () => `applied ${c.completionsApplied} + ignored ${c.completionsIgnored} < pushed ${JSON.stringify([...s.pushed])}`,
  );
}

const terminal = (r: WorkflowRuntime) => isTerminalWorkflowStatus(r.status);

/** The task name of a completion message body; null for a wake-up or a poison message. */
function completionOf(body: string): string | null {
  const decoded = decodeCoordinatorMessage(body);
  return decoded.kind === 'completion' ? decoded.completion.taskName : null;
}

/** What a promise settled with: `{ value }` or `{ error }`; never rejects. */
function settled<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

/**
 * Each failure mode runs three times: as a coordinator of an unsharded deployment, and as the
 * runner of shard 0 and of shard 3 of 4 (docs/sharding.md), its lease a claim of a
 * MemoryOwnershipStore, its workflows' ids in its shard, its completions on its shard's queue.
 * Where a mode acts on the coordinator lease, a shard runner's is its claim's: case 9's takeover
 * breaks the shard's lease (`OwnershipStore.breakLease(k)`) and claims it, its failed renewal is the
 * claim's lease's. After each case (see `stayedInShard`), every listing a shard runner made carried
 * its shard filter, read only its shard's index partitions (counted) and returned only its
 * workflows, and a workflow of another shard in the same store was never touched.
 */
const VARIANTS: { name: string; shard: { index: number; count: ShardCount } | null }[] = [
  { name: 'unsharded', shard: null },
  { name: 'shard 0 of 4', shard: { index: 0, count: 4 } },
  { name: 'shard 3 of 4', shard: { index: 3, count: 4 } },
];

/** What a stack's coordinators listed and touched stayed in its shard (an unsharded stack's listings have no shard filter). */
async function stayedInShard(s: MemoryStack): Promise<void> {
  expect(s.listings.length).toBeGreaterThan(0);
  // A re-run listing of one workflow reads that workflow's rows only (it names the workflow).
  const scans = s.listings.filter((l) => l.method !== 'listReruns' || l.filter?.workflowId === undefined);
  if (s.shard === null) {
    for (const l of scans) expect(l.filter === undefined || !Object.hasOwn(l.filter, 'shard')).toBe(true);
    return;
  }
  const { index, count } = s.shard;
  const own = Array.from({ length: 16 }, (_, p) => p).filter((p) => p % count === index);
  for (const l of scans) {
    expect(l.filter?.shard).toEqual({ index, count });
    expect(l.partitions).toEqual(own);
    for (const id of l.ids) expect({ id, shard: shardOf(id, count) }).toEqual({ id, shard: index });
  }
  // Counted: 16 / count partitions per scan, a quarter of an unsharded scan's.
  const read = scans.reduce((n, l) => n + l.partitions.length, 0);
  expect(read).toBe(scans.length * (16 / count));
  for (const id of s.touched) if (id.startsWith('wf-')) expect(shardOf(id, count)).toBe(index);
  // The other shard's workflow: never named nor returned, never dispatched, its wake-up still on its own queue.
  const foreign = s.foreignId!;
  expect(shardOf(foreign, count)).not.toBe(index);
  expect(s.touched.has(foreign)).toBe(false);
  const stored = await s.store.load(foreign);
  expect(stored?.runtime.tasks.a).toMatchObject({ status: 'ready', attemptNo: 0 });
  expect(await s.foreignCompletions!.approximateMessageCount()).toBe(1);
}

describe.each(VARIANTS)('Coordinator failure modes (in memory, virtual time): $name', ({ shard }) => {
  const opened: MemoryStack[] = [];
  const open = async (options: MemoryStackOptions = {}): Promise<MemoryStack> => {
    const s = await stacks.open({ ...options, ...(shard === null ? {} : { shard }) });
    opened.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of opened.splice(0)) await stayedInShard(s);
  });

  it('1. two completions for one workflow in one batch are applied with one flush', async () => {
    let savesOfWorkflow = 0;
    const s = await open({
      coordinatorStore: (store) =>
        wrapStore(store, async (_runtime, _etag, save) => {
          const result = await save();
          savesOfWorkflow++;
          return result;
        }),
    });
    const workflowId = await s.submit({
      name: 'pair',
      tasks: [
        { name: 'a', kwargs: { cmd: 'sleep 10' } },
        { name: 'b', kwargs: { cmd: 'sleep 10' } },
      ],
    });
    await s.waitFor(workflowId, (r) => r.tasks.a?.status === 'running' && r.tasks.b?.status === 'running');
    // Both tasks are held by workers; stop the coordinator, let both complete, then start a new one
    // that finds both completions on the queue at once.
    await s.coordinator.stop();
    await s.until(
      async () => (await s.completions.approximateMessageCount()) >= 2,
      () => 'two completions on the completion queue',
    );
    savesOfWorkflow = 0;
    const second = await s.openCoordinator();
    await second.start();
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    await s.until(
      () => second.counters.completionsApplied + second.counters.completionsIgnored >= 2,
      () => JSON.stringify(second.counters),
    );
    expect(savesOfWorkflow).toBe(1);
    expect(second.counters).toMatchObject({ completionsApplied: 2, completionsIgnored: 0, saves: 1, conflicts: 0, leftForRedelivery: 0 });
    await s.until(
      async () => (await s.completions.approximateMessageCount()) === 0,
      () => 'both completions acked',
    );
  });

  it('2. a concurrent writer makes the flush 412: re-read and re-applied; with flushRetryLimit 0 the messages are left and applied later', async () => {
    // (a) One concurrent write: the coordinator's save of a's completion fails with 412 and converges.
    {
      let injected = 0;
      const s = await open({
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
      const done = await s.run({
        name: 'cas',
        tasks: [
          { name: 'a', kwargs: { cmd: 'true' } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        ],
      });
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
      expect(s.runCount('b')).toBe(2);
      expect(s.logs.some((line) => line.includes('412 on flush, re-reading and re-applying'))).toBe(true);
    }
    // (b) flushRetryLimit 0 and a conflict on the first 2 flushes of a's completion: left twice, then applied.
    {
      let injected = 0;
      const s = await open({
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
      const done = await s.run({
        name: 'cas-0',
        tasks: [
          { name: 'a', kwargs: { cmd: 'true' } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        ],
      });
      expect(done.status).toBe('completed');
      expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
      await allCompletionsSettled(s);
      const c = s.coordinator.counters;
      expect(c).toMatchObject({ conflicts: 2, leftForRedelivery: 2, completionsApplied: 2 });
      expect(c.completionsIgnored).toBe(total(s.pushed) - 2);
      expect(s.logs.filter((line) => line.includes('left for redelivery'))).toHaveLength(2);
    }
  });

  it('3. a coordinator "crash" after pushing the children, before the flush: the completion is redelivered, children pushed twice, each task completed once', async () => {
    let crashed = 0;
    const s = await open({
      coordinatorStore: (store) =>
        wrapStore(store, async (runtime, _etag, save) => {
          if (crashed === 0 && runtime.tasks.a?.status === 'completed') {
            crashed++;
            throw new JobqError('internal', 'injected crash before the flush');
          }
          return save();
        }),
    });
    const done = await s.run({
      name: 'crash-before-flush',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        { name: 'c', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(crashed).toBe(1);
    expect(done.status).toBe('completed');
    // The lost flush never recorded the children's dispatch, so the re-dispatch is attempt 1 again.
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], c: ['completed', 1] });
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 2, c: 2 });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ completionsApplied: 3, completionsIgnored: 2 });
    expect([s.runCount('a'), s.runCount('b'), s.runCount('c')]).toEqual([1, 2, 2]);
    expect(s.logs.some((line) => line.includes('injected crash before the flush'))).toBe(true);
  });

  it('4. a worker "crash" after the user code, before the completion: the task message is redelivered and re-run', async () => {
    let failed = 0;
    const s = await open({
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
    const done = await s.run({
      name: 'worker-crash',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(failed).toBe(1);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    expect(s.runCount('a')).toBe(2);
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 1 });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ completionsApplied: 2, completionsIgnored: 0 });
    expect(s.workerLogs.some((line) => line.includes('left for redelivery'))).toBe(true);
  });

  it('5. one task message delivered to two workers: both run it, one completion applied, the other ignored', async () => {
    const s = await open({
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: async (_messages, send) => {
            await send();
            await send();
          },
        }),
    });
    const done = await s.run({
      name: 'duplicate-delivery',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 2, b: 2 });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ completionsApplied: 2, completionsIgnored: 2 });
    expect([s.runCount('a'), s.runCount('b')]).toEqual([2, 2]);
    const later = await s.store.load(done.workflowId);
    expect(later && outcome(later.runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
  });

  it('7. receive errors on the completion queue are logged and the loop goes on', async () => {
    let failures = 0;
    const s = await open({
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
    const done = await s.run({
      name: 'receive-errors',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    await allCompletionsSettled(s);
    expect(s.coordinator.counters).toMatchObject({ receiveErrors: 2, completionsApplied: 2, completionsIgnored: 0 });
    expect(s.logs.filter((line) => line.startsWith('receive failed: unavailable: injected receive failure'))).toHaveLength(2);
  });

  it('8. a coordinator "crash" after the flush, before the ack: a restarted coordinator ignores the redelivered completion; nothing applied twice', async () => {
    const clock = new VirtualClock();
    let crashed = false;
    let finishingSaves = 0;
    const s = await open({
      clock,
      coordinatorStore: (store) =>
        wrapStore(store, async (runtime, _etag, save) => {
          const result = await save();
          if (runtime.status === 'completed') finishingSaves++;
          return result;
        }),
      // The first coordinator dies at the ack of a's completion: the ack never reaches the queue and
      // from then on it receives nothing.
      coordinatorCompletions: (queue) =>
        new WrappedQueue(queue, {
          receive: async (options, receive) => {
            if (!crashed) return receive();
            await clock.sleep(50, options.abortSignal); // a receive ends when its signal fires, as the adapters' do
            return [];
          },
          complete: (message, complete) => {
            if (!crashed && completionOf(message.body) === 'a') {
              crashed = true;
              return Promise.reject(new JobqError('internal', 'injected crash after the flush, before the ack'));
            }
            return complete();
          },
        }),
    });
    const workflowId = await s.submit({
      name: 'crash-before-ack',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'sleep 1' } },
      ],
    });
    await s.until(
      () => crashed,
      () => "a's completion never acked",
    );
    const old = s.coordinator;
    // The flush happened: a is completed and b dispatched, though a's completion is still on the queue.
    const flushed = await s.waitFor(workflowId, (r) => r.tasks.a?.status === 'completed');
    expect(flushed.tasks.b?.attemptNo).toBe(1);
    await s.until(
      () => old.counters.ackErrors === 1,
      () => JSON.stringify(old.counters),
    );
    expect(old.counters).toMatchObject({ completionsApplied: 1, completionsIgnored: 0, ackErrors: 1 });
    await old.stop(); // releases the lease

    const next = await s.openCoordinator({}, { completions: (queue) => queue });
    await next.start();
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    // a's completion comes back after its lock (2 s): ignored, the task is terminal at attempt 1.
    await s.until(
      () => next.counters.completionsApplied + next.counters.completionsIgnored >= 2,
      () => JSON.stringify(next.counters),
    );
    expect(next.counters).toMatchObject({ completionsApplied: 1, completionsIgnored: 1 });
    await s.until(
      async () => (await s.completions.approximateMessageCount()) === 0,
      () => 'the redelivered completion acked',
    );
    const later = await s.store.load(workflowId);
    expect(later && outcome(later.runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
    expect(later?.runtime.finishedAt).toBe(done.finishedAt);
    expect(finishingSaves).toBe(1);
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 1 });
    expect([s.runCount('a'), s.runCount('b')]).toEqual([1, 1]);
    expect(s.logs.some((line) => line.includes('failed: internal: injected crash after the flush, before the ack'))).toBe(true);
  });

  it('9. two coordinators on one store: a second one with breakLease takes over; the old one loses its lease, saves nothing more and its run() rejects with lease-lost', async () => {
    // (a) The lease is broken by the new coordinator: the old one learns it at once.
    {
      let lost = false;
      let savesBeforeLoss = 0;
      let savesAfterLoss = 0;
      const s = await open({
        coordinatorStore: (store) =>
          wrapStore(store, (_runtime, _etag, save) => {
            if (lost) savesAfterLoss++;
            else savesBeforeLoss++;
            return save();
          }),
        coordinatorLease: (lease) => {
          // Registered before the coordinator's own listener: `lost` is set before it halts.
          lease.lost.addEventListener('abort', () => (lost = true), { once: true });
          return lease;
        },
      });
      const old = s.coordinator;
      const oldRun = settled(old.run());
      const sleepy = (name: string, deps: string[] = []) => ({ name, depends_on: deps, kwargs: { cmd: 'sleep 0.2' } });
      const middle = ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'];
      const workflowId = await s.submit({
        name: 'takeover',
        tasks: [sleepy('a'), ...middle.map((n) => sleepy(n, ['a'])), sleepy('c', middle)],
      });
      await s.waitFor(workflowId, (r) => r.tasks.a?.status === 'completed');
      expect(savesBeforeLoss).toBeGreaterThan(0);

      const next = await s.openCoordinator({ breakLease: true }, { store: (store) => store, lease: (lease) => lease });
      await next.start();
      const result = await oldRun;
      expect('error' in result && isJobqError(result.error, 'lease-lost')).toBe(true);
      expect(lost).toBe(true);
      expect(s.logs.some((line) => line.startsWith('lease lost: stopping at once (lease-lost: '))).toBe(true);

      const done = await s.waitFor(workflowId, terminal);
      expect(done.status).toBe('completed');
      expect(Object.values(outcome(done))).toEqual(Array.from({ length: 8 }, () => ['completed', 1]));
      // The old coordinator never wrote after the loss; the new one finished the workflow.
      expect(savesAfterLoss).toBe(0);
      await s.until(
        () => next.counters.saves > 0,
        () => JSON.stringify(next.counters),
      );
      expect(old.counters.completionsApplied + next.counters.completionsApplied).toBeLessThanOrEqual(8);
      await expect(next.stop()).resolves.toBeUndefined();
    }
    // (b) The renewal fails (injected on the lease object): the coordinator stops writing at once and
    // leaves its completions on the queue; a coordinator started after it applies them.
    {
      let failRenewal: (() => void) | undefined;
      let released: Promise<void> | undefined;
      let lost = false;
      let savesAfterLoss = 0;
      let holdCompletions = false;
      const s = await open({
        coordinatorStore: (store) =>
          wrapStore(store, (_runtime, _etag, save) => {
            if (lost) savesAfterLoss++;
            return save();
          }),
        coordinatorLease: (inner): CoordinatorLease => {
          const controller = new AbortController();
          inner.lost.addEventListener('abort', () => controller.abort(inner.lost.reason), { once: true });
          failRenewal = () => {
            lost = true;
            controller.abort(new JobqError('lease-lost', 'the coordinator lease was lost (injected: renewal failed); stop writing'));
            // The real lease stops being renewed (it would run out after failed renewals).
            released = inner.release().catch(() => undefined);
          };
          return { leaseId: inner.leaseId, lost: controller.signal, release: () => inner.release() };
        },
        // The old coordinator is in the middle of receiving b's completion when the lease goes.
        coordinatorCompletions: (queue) =>
          new WrappedQueue(queue, {
            receive: async (_options, receive) => {
              const messages = await receive();
              if (holdCompletions && messages.some((m) => completionOf(m.body) === 'b')) failRenewal?.();
              return messages;
            },
          }),
      });
      const old = s.coordinator;
      const oldRun = settled(old.run());
      const workflowId = await s.submit({
        name: 'renewal-fails',
        tasks: [
          { name: 'a', kwargs: { cmd: 'true' } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
          { name: 'c', depends_on: ['b'], kwargs: { cmd: 'true' } },
        ],
      });
      holdCompletions = true;
      let result: { value: void } | { error: unknown } | undefined;
      void oldRun.then((r) => (result = r));
      await s.until(
        () => result !== undefined,
        () => 'the old coordinator never stopped',
      );
      expect(result !== undefined && 'error' in result && isJobqError(result.error, 'lease-lost')).toBe(true);
      expect(result !== undefined && 'error' in result && (result.error as Error).message).toMatch(/injected: renewal failed/);
      expect(savesAfterLoss).toBe(0);
      const stuck = await s.store.load(workflowId);
      expect(stuck && outcome(stuck.runtime)).toEqual({ a: ['completed', 1], b: ['running', 1], c: ['pending', 0] });

      await released;
      const next = await s.openCoordinator({}, { store: (store) => store, lease: (lease) => lease });
      await next.start();
      const done = await s.waitFor(workflowId, terminal);
      expect(done.status).toBe('completed');
      expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], c: ['completed', 1] });
      expect(savesAfterLoss).toBe(0);
      await s.until(
        () => next.counters.completionsApplied >= 2,
        () => JSON.stringify(next.counters),
      );
      expect([old.counters.completionsApplied, next.counters.completionsApplied]).toEqual([1, 2]);
    }
  });

  it('10. a completion-queue outage (receive and ack fail for a while): the coordinator logs, backs off, then applies the redelivered completions', async () => {
    let outage = false;
    let ended = false;
    let swallowed = 0;
    let ackFailures = 0;
    const down = () => new JobqError('unavailable', 'injected: the completion queue is unreachable');
    const s = await open({
      // One batch at a time: the choreography needs the receive after a's ack to be the one that
      // swallows b and c (with more batches in flight a receive made before the ack takes them,
      // and their failed acks bring them back as ignored duplicates: correct, but not this case).
      coordinator: { pipelineDepth: 1 },
      coordinatorCompletions: (queue) =>
        new WrappedQueue(queue, {
          // During the outage a receive reaches the queue (the messages it took become invisible)
          // but its answer is lost; the outage ends once it swallowed the completions of b and c.
          receive: async (_options, receive) => {
            if (!outage) return receive();
            const messages = await receive();
            swallowed += messages.filter((m) => ['b', 'c'].includes(completionOf(m.body) ?? '')).length;
            if (swallowed >= 2) {
              outage = false;
              ended = true;
            }
            throw down();
          },
          complete: (message, complete) => {
            if (!outage && !ended && completionOf(message.body) === 'a') outage = true;
            if (outage) {
              ackFailures++;
              return Promise.reject(down());
            }
            return complete();
          },
        }),
    });
    const workflowId = await s.submit({
      name: 'completion-outage',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        { name: 'c', depends_on: ['a'], kwargs: { cmd: 'true' } },
        { name: 'd', depends_on: ['b', 'c'], kwargs: { cmd: 'true' } },
      ],
    });
    const done = await s.waitFor(workflowId, terminal);
    expect(ended).toBe(true);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], c: ['completed', 1], d: ['completed', 1] });
    const c = s.coordinator.counters;
    await s.until(
      () => c.completionsApplied >= 4 && c.completionsIgnored >= 1,
      () => JSON.stringify(c),
    );
    // a was applied before its ack failed: its redelivery is ignored; b and c, lost in the outage, are applied once.
    expect(c).toMatchObject({ completionsApplied: 4, completionsIgnored: 1, ackErrors: ackFailures });
    expect(ackFailures).toBe(1);
    expect(c.receiveErrors).toBeGreaterThanOrEqual(1);
    expect(s.logs.filter((line) => line === 'receive failed: unavailable: injected: the completion queue is unreachable')).toHaveLength(
      c.receiveErrors,
    );
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 1, c: 1, d: 1 });
    // Still running: it never gave up on the queue.
    await expect(s.coordinator.stop()).resolves.toBeUndefined();
    expect(await s.completions.approximateMessageCount()).toBe(0);
  });

  it('11. a running task whose queue message was lost: without timeout_s explain flags it stale and nothing recovers it; with timeout_s the lost-task sweep does once its message must have expired', async () => {
    // (a) No timeout_s: stays running; explain (with a clock 10 min ahead) calls it stale.
    {
      const listings: WorkflowFilter[] = [];
      const s = await open({
        coordinator: { timeoutSweepIntervalInMs: 200, readySweepIntervalInMs: 200, readyRepairThresholdInMs: 500 },
        coordinatorStore: (store): WorkflowStore => ({
          ...wrapStore(store, null),
          listWorkflows: (filter) => {
            if (filter) listings.push(filter);
            return store.listWorkflows(filter);
          },
        }),
        // The task message of a is deleted before any worker sees it.
        coordinatorTasks: (queue) =>
          new WrappedQueue(queue, {
            send: (messages, send) => (messages.some((m) => taskNameOf(m.body) === 'a') ? Promise.resolve() : send()),
          }),
      });
      const workflowId = await s.submit({
        name: 'lost-message',
        tasks: [
          { name: 'a', kwargs: { cmd: 'true' } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        ],
      });
      const running = await s.waitFor(workflowId, (r) => r.tasks.a?.status === 'running');
      expect(running.tasks.a?.attemptNo).toBe(1);

      const later = new WorkflowClient({
        store: s.store,
        completions: s.completions,
        outputsContainer: null,
        now: () => new Date(s.clock.now() + 10 * 60_000),
      });
      const report = await later.explain(workflowId, { staleRunningAfterMs: 60_000 });
      expect(report.workflow.status).toBe('running');
      const a = report.tasks.find((t) => t.name === 'a');
      expect(a).toMatchObject({ status: 'running', attemptNo: 1 });
      expect(a?.reasons.join('\n')).toMatch(
        /stale: dispatched longer than 60s ago; its message may be lost or its worker gone — set timeout_s/,
      );
      const now = await s.client.explain(workflowId, { staleRunningAfterMs: 60_000 });
      expect(now.tasks.find((t) => t.name === 'a')?.reasons.join('\n')).not.toMatch(/stale/);

      // Several timeout and ready-repair sweeps (listings of running, not pending, workflows) and a
      // minute later, it is still running at attempt 1, never sent again.
      const sweeps = () => listings.filter((f) => f.savedStatus?.includes('running') && !f.savedStatus.includes('pending')).length;
      const start = sweeps();
      await s.until(
        () => sweeps() >= start + 6,
        () => `sweeps: ${sweeps() - start}`,
      );
      await s.clock.advance(60_000);
      const still = await s.store.load(workflowId);
      expect(still && outcome(still.runtime)).toEqual({ a: ['running', 1], b: ['pending', 0] });
      expect(s.pushed.get('a')).toBeUndefined();
      expect(s.coordinator.counters).toMatchObject({ timeoutSweeps: 0, readyRepairs: 0 });
    }
    // (b) timeout_s 1, num_retries 1, task messages living 5 s: explain says the sweep recovers it;
    // a coordinator's lost-task sweep fails attempt 1 (5 s + 1 s + 0.5 s after its dispatch) and
    // attempt 2 runs.
    {
      let dropped = 0;
      const s = await open({
        coordinator: { timeoutSweepIntervalInMs: 200, taskMessageTtlInMs: 5_000, lostTaskGraceInMs: 500 },
        coordinatorTasks: (queue) =>
          new WrappedQueue(queue, {
            send: (messages, send) => {
              if (dropped === 0 && messages.some((m) => taskNameOf(m.body) === 'a')) {
                dropped++;
                return Promise.resolve();
              }
              return send();
            },
          }),
      });
      const workflowId = await s.submit({
        name: 'lost-message-timeout',
        tasks: [
          { name: 'a', timeout_s: 1, num_retries: 1, kwargs: { cmd: 'true' } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        ],
      });
      const running = await s.waitFor(workflowId, (r) => r.tasks.a?.status === 'running');
      // Explained while no coordinator runs (nothing moves), with the clock 10 min ahead.
      await s.coordinator.stop();
      const later = new WorkflowClient({
        store: s.store,
        completions: s.completions,
        outputsContainer: null,
        now: () => new Date(s.clock.now() + 10 * 60_000),
      });
      const report = await later.explain(workflowId, { staleRunningAfterMs: 60_000 });
      expect(report.tasks.find((t) => t.name === 'a')?.reasons.join('\n')).toMatch(
        /stale: dispatched longer than 60s ago[^\n]*with timeout_s 1s the coordinator declares it lost once its message has expired/,
      );

      const next = await s.openCoordinator();
      await next.start();
      const done = await s.waitFor(workflowId, terminal);
      expect(dropped).toBe(1);
      expect(done.status).toBe('completed');
      expect(outcome(done)).toEqual({ a: ['completed', 2], b: ['completed', 1] });
      expect(next.counters.timeoutSweeps).toBeGreaterThanOrEqual(1);
      expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 1 });
      expect(s.runCount('a')).toBe(1);
      // Attempt 1 was failed by the sweep no earlier than its message's lifetime + timeout + grace.
      const failedAt = Date.parse(done.tasks.a?.dispatchedAt ?? '');
      expect(failedAt - Date.parse(running.tasks.a?.dispatchedAt ?? '')).toBeGreaterThanOrEqual(5_000 + 1_000 + 500);
    }
  });

  it('12. the index row write of the final flush is lost (after the runtime was saved): a sweep finds the row behind its runtime and writes it again', async () => {
    let lostWrites = 0;
    const s = await open({
      coordinator: { timeoutSweepIntervalInMs: 200, readySweepIntervalInMs: 200, readyRepairThresholdInMs: 500 },
      coordinatorStore: (store) =>
        wrapStore(store, async (runtime, _etag, save) => {
          // Only the first final save loses its row writes (a transient fault).
          store.rowFault =
            lostWrites === 0 && isTerminalWorkflowStatus(runtime.status)
              ? () => (lostWrites++, new JobqError('unavailable', 'injected: the index row write was lost'))
              : null;
          try {
            return await save();
          } finally {
            store.rowFault = null;
          }
        }),
    });
    const done = await s.run({
      name: 'lost-index-row',
      tasks: [
        { name: 'a', kwargs: { cmd: 'true' } },
        { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(done.status).toBe('completed');
    expect(lostWrites).toBe(1);
    await s.until(
      () => s.coordinator.counters.rowsErrors === 1,
      () => JSON.stringify(s.coordinator.counters),
    );
    let row: string | undefined;
    await s.until(
      async () => (row = (await s.store.getWorkflow(done.workflowId))?.status) === 'completed',
      () => `the index row of ${done.workflowId} still says ${row} while its runtime is completed`,
      5_000,
    );
    expect(s.coordinator.counters.rowRepairs).toBe(1);
  });
});
