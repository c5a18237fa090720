import { beforeEach, describe, expect, it } from '@jest/globals';
import { encodeTaskMessage, type TaskMessageInput } from '@jobq/dag-core';
import { JobqError, VirtualClock } from '@jobq/ports';
import { MemoryTaskQueue } from '@jobq/memory';
import type { Processor, TaskContext } from './processor';
import { memoryOutputs, RecordingCompletions } from './test-helpers/memory-workflow';
import { collectingLog, runOnClock, task, WrappedQueue } from './test-helpers/worker-helpers';
import { maxDeliveriesFromEnv, Worker, type WorkerOptions } from './worker';
import { WorkflowProcessor, type WorkflowProcessorOptions } from './workflow-processor';

// The worker, its queue and the workflow processor run on a virtual clock: a left message comes back
// after its lock, and the worker stops at its idle timeout, without wall-clock waits.

const LOCK_IN_MS = 60;

/** The virtual clock of the current test. */
let clock = new VirtualClock();
beforeEach(() => {
  clock = new VirtualClock();
});

/** A queue whose left messages come back after 60 ms, and that records dead-letter reasons. */
const shortLockQueue = () => new WrappedQueue(new MemoryTaskQueue({ lockDurationInMs: LOCK_IN_MS, clock }));

function run(queue: WrappedQueue, processors: Processor[], options: Partial<WorkerOptions> = {}) {
  return runOnClock(clock, new Worker({ queue, processors, idleTimeoutInMs: 500, receiveWaitInMs: 20, maxIdleBackoffInMs: 20, log: () => undefined, clock, ...options }));
}

/** A processor that leaves every message and records what it was asked. */
function leaver(withGiveUp = true) {
  const processed: number[] = [];
  const givenUp: Array<{ delivery: number; reason: string }> = [];
  const processor: Processor = {
    name: 'leaver',
    accepts: () => true,
    process: (context: TaskContext) => {
      processed.push(context.message.deliveryCount);
      return Promise.resolve({ kind: 'leave', reason: 'the thing it needs is\nnot there yet' });
    },
    ...(withGiveUp
      ? {
          giveUp: (context: TaskContext, reason: string) => {
            givenUp.push({ delivery: context.message.deliveryCount, reason });
            return Promise.resolve();
          },
        }
      : {}),
  };
  return { processor, processed, givenUp };
}

describe('Worker: the delivery bound', () => {
  it('a message left at delivery N is dead-lettered with the leave reason (one line), after giveUp', async () => {
    const queue = shortLockQueue();
    await queue.send(task('t-left', { cmd: 'true' }));
    const { processor, processed, givenUp } = leaver();
    const summary = await run(queue, [processor], { maxDeliveries: 3 });
    expect(processed).toEqual([1, 2, 3]);
    expect(givenUp).toEqual([{ delivery: 3, reason: 'gave up after 3 deliveries: the thing it needs is not there yet' }]);
    expect(queue.deadLetterReasons).toEqual(['gave up after 3 deliveries: the thing it needs is not there yet']);
    expect(summary).toMatchObject({ processed: 3, left: 2, deadLettered: 1 });
    expect(await queue.approximateMessageCount()).toBe(0);
    expect(await queue.deadLetterQueue().approximateMessageCount()).toBe(1);
  });

  it('a message delivered more than N times is not run: giveUp, then the dead-letter queue', async () => {
    const queue = shortLockQueue();
    await queue.send(task('t-over', { cmd: 'true' }));
    // Three deliveries that ended without an outcome (a worker that crashed, say).
    for (let i = 0; i < 3; i++) await queue.abandon((await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 }))[0]!);
    const { processor, processed, givenUp } = leaver();
    const out = collectingLog();
    const summary = await run(queue, [processor], { maxDeliveries: 3, log: out.log });
    expect(processed).toEqual([]);
    expect(givenUp).toEqual([{ delivery: 4, reason: 'gave up after 4 deliveries: the limit is 3 (JOBQ_MAX_DELIVERIES)' }]);
    expect(queue.deadLetterReasons).toEqual(['gave up after 4 deliveries: the limit is 3 (JOBQ_MAX_DELIVERIES)']);
    expect(summary).toMatchObject({ processed: 1, deadLettered: 1 });
    expect(out.lines).toContain('[t-over] gave up after 4 deliveries: the limit is 3 (JOBQ_MAX_DELIVERIES); dead-lettering');
  });

  it('works for processors without the hook, and a failing task with more retries than N stops at N', async () => {
    const queue = shortLockQueue();
    await queue.send(task('t-plain', { cmd: 'true' }));
    await queue.send(task('t-retries', { cmd: 'exit 1' }, 100));
    const { processor } = leaver(false);
    const failing: Processor = { name: 'failing', accepts: (kwargs) => kwargs.cmd === 'exit 1', process: () => Promise.resolve({ kind: 'failed', error: 'exit code 1' }) };
    const summary = await run(queue, [failing, processor], { maxDeliveries: 2 });
    expect(queue.deadLetterReasons.sort()).toEqual(['exit code 1 (the delivery limit 2 was reached)', 'gave up after 2 deliveries: the thing it needs is not there yet']);
    expect(summary).toMatchObject({ deadLettered: 2, failed: 2, abandoned: 1 });
  });

  it('a leave while the worker is stopping does not count against the bound', async () => {
    const queue = shortLockQueue();
    await queue.send(task('t-stop', { cmd: 'true' }));
    const running: { worker?: Worker } = {};
    const stopper: Processor = {
      name: 'stopper',
      accepts: () => true,
      process: () => {
        void running.worker?.stop({ gracePeriodInMs: 0 });
        return Promise.resolve({ kind: 'leave', reason: 'configuration error' });
      },
      giveUp: () => Promise.reject(new Error('must not be called')),
    };
    running.worker = new Worker({ queue, processors: [stopper], maxDeliveries: 1, idleTimeoutInMs: null, receiveWaitInMs: 20, log: () => undefined, clock });
    const summary = await runOnClock(clock, running.worker);
    expect(summary).toMatchObject({ left: 1, deadLettered: 0 });
    expect(queue.deadLetterReasons).toEqual([]);
  });

  it('reads JOBQ_MAX_DELIVERIES', () => {
    expect(maxDeliveriesFromEnv({})).toBe(20);
    expect(maxDeliveriesFromEnv({ JOBQ_MAX_DELIVERIES: ' ' })).toBe(20);
    expect(maxDeliveriesFromEnv({ JOBQ_MAX_DELIVERIES: '5' })).toBe(5);
    for (const bad of ['0', '-1', '2.5', 'ten', '1e3']) {
      expect(() => maxDeliveriesFromEnv({ JOBQ_MAX_DELIVERIES: bad })).toThrow(/JOBQ_MAX_DELIVERIES must be an integer/);
    }
    expect(() => new Worker({ queue: new MemoryTaskQueue(), processors: [], maxDeliveries: 0 })).toThrow(RangeError);
  });
});

describe('WorkflowProcessor under the delivery bound', () => {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Bound' };

  function workflow(overrides: Partial<WorkflowProcessorOptions> = {}) {
    const completions = new RecordingCompletions();
    const outputs = memoryOutputs();
    const processor = new WorkflowProcessor({
      outputs,
      completions,
      isCancelled: () => Promise.resolve(false),
      env,
      killTimeoutInMs: 1_000,
      completionSendMaxAttempts: 3,
      completionBackoff: { initialInMs: 1, maxInMs: 2 },
      clock,
      ...overrides,
    });
    return { completions, outputs, processor };
  }

  const input = (extra: Partial<TaskMessageInput> = {}): TaskMessageInput => ({ workflowId: 'wf-bound', taskName: 'a', attemptNo: 2, kwargs: { cmd: 'true' }, ...extra });

  it('a completion refused with a permanent error (expired SAS) is not retried: the message is left', async () => {
    const { completions, processor } = workflow();
    completions.failures = [new JobqError('auth', 'Server failed to authenticate the request (403)')];
    const queue = shortLockQueue();
    await queue.send({ body: encodeTaskMessage(input()) });
    const out = collectingLog();
    await runOnClock(clock, new Worker({ queue, processors: [processor], idleTimeoutInMs: 20, receiveWaitInMs: 0, maxIdleBackoffInMs: 1_000, log: out.log, clock }));
    expect(completions.sendCalls).toBe(1);
    expect(out.lines).toContain(
      '[wf-bound/a/2] left for redelivery: the completion of task "a" was refused by the completion queue: Server failed to authenticate the request (403); the message is left for redelivery (it may go through once that is fixed)',
    );
  });

  it('a task left N times (its completion refused each time) ends with one failure completion and the dead-letter queue', async () => {
    const { completions, processor } = workflow();
    completions.failures = [1, 2, 3].map(() => new JobqError('auth', 'Server failed to authenticate the request (403)'));
    const queue = shortLockQueue();
    await queue.send({ body: encodeTaskMessage(input()) });
    const summary = await run(queue, [processor], { maxDeliveries: 3 });
    expect(completions.sendCalls).toBe(4); // one refused send per delivery, then the give-up report
    expect(completions.sent).toEqual([
      expect.objectContaining({
        workflowId: 'wf-bound',
        taskName: 'a',
        attemptNo: 2,
        success: false,
        error: expect.stringMatching(/^gave up after 3 deliveries: the completion of task "a" was refused .*403/),
      }),
    ]);
    expect(queue.deadLetterReasons).toEqual([completions.sent[0]!.error]);
    expect(summary).toMatchObject({ left: 2, deadLettered: 1 });
    expect(await queue.approximateMessageCount()).toBe(0);
  });

  it('upstream refs that cannot be read (transient) are given up after N deliveries with one failure completion', async () => {
    const { completions, outputs, processor } = workflow();
    outputs.overflowError = new JobqError('unavailable', 'the state container did not answer');
    const queue = shortLockQueue();
    await queue.send({ body: encodeTaskMessage(input({ upstreamBlob: 'bound-state/upstream/wf-bound/a/2.json' })) });
    await run(queue, [processor], { maxDeliveries: 2 });
    expect(completions.sent).toEqual([expect.objectContaining({ success: false, error: expect.stringMatching(/^gave up after 2 deliveries: could not read the upstream refs/) })]);
    expect(await queue.deadLetterQueue().approximateMessageCount()).toBe(1);
  });

  it("a task of a workflow this deployment does not know is dead-lettered after N deliveries, without a completion", async () => {
    const { completions, processor } = workflow({ isKnownWorkflow: () => Promise.resolve(false) });
    const queue = shortLockQueue();
    await queue.send({ body: encodeTaskMessage(input({ workflowId: 'wf-elsewhere' })) });
    const summary = await run(queue, [processor], { maxDeliveries: 3 });
    expect(completions.sendCalls).toBe(0);
    expect(queue.deadLetterReasons).toEqual([expect.stringMatching(/^gave up after 3 deliveries: workflow "wf-elsewhere" is not in this worker's deployment/)]);
    expect(summary).toMatchObject({ left: 2, deadLettered: 1 });
  });
});
