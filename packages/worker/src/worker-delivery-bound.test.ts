import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { encodeTaskMessage, type TaskMessageInput } from '@jobq/dag-core/wire';
import { JobqError, VirtualClock, type TaskQueue } from '@jobq/ports';
import { MemoryTaskQueue } from '@jobq/memory';
import type { Processor, TaskContext } from './processor';
import { memoryOutputs, RecordingCompletions } from './test-helpers/memory-workflow';
import { realQueueBackends } from './test-helpers/real-queues';
import { collectingLog, runOnClock, task, waitFor, WrappedQueue } from './test-helpers/worker-helpers';
import { maxDeliveriesFromEnv, Worker, type WorkerOptions } from './worker';
import { WorkflowProcessor, type WorkflowProcessorOptions } from './workflow-processor';

// The worker, its queue and the workflow processor run on a virtual clock: a left message comes back
// after its lock, and the worker stops at its idle timeout, without wall-clock waits. The last block
// runs the bound on the real queue services instead.

const LOCK_IN_MS = 60;

/** The virtual clock of the current test. */
let clock = new VirtualClock();
beforeEach(() => {
  clock = new VirtualClock();
});

/** A queue whose left messages come back after 60 ms, and that records dead-letter reasons. */
const shortLockQueue = () => new WrappedQueue(new MemoryTaskQueue({ lockDurationInMs: LOCK_IN_MS, clock }));

function run(queue: WrappedQueue, processors: Processor[], options: Partial<WorkerOptions> = {}) {
  return runOnClock(
    clock,
    new Worker({
      queue,
      processors,
      idleTimeoutInMs: 500,
      receiveWaitInMs: 20,
      maxIdleBackoffInMs: 20,
      log: () => undefined,
      clock,
      ...options,
    }),
  );
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
    const failing: Processor = {
      name: 'failing',
      accepts: (kwargs) => kwargs.cmd === 'exit 1',
      process: () => Promise.resolve({ kind: 'failed', error: 'exit code 1' }),
    };
    const summary = await run(queue, [failing, processor], { maxDeliveries: 2 });
    expect(queue.deadLetterReasons.sort()).toEqual([
      'exit code 1 (the delivery limit 2 was reached)',
      'gave up after 2 deliveries: the thing it needs is not there yet',
    ]);
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
    running.worker = new Worker({
      queue,
      processors: [stopper],
      maxDeliveries: 1,
      idleTimeoutInMs: null,
      receiveWaitInMs: 20,
      log: () => undefined,
      clock,
    });
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

  const input = (extra: Partial<TaskMessageInput> = {}): TaskMessageInput => ({
    workflowId: 'wf-bound',
    taskName: 'a',
    attemptNo: 2,
    kwargs: { cmd: 'true' },
    ...extra,
  });

  it('a completion refused with a permanent error (expired SAS) is not retried: the message is left', async () => {
    const { completions, processor } = workflow();
    completions.failures = [new JobqError('auth', 'Server failed to authenticate the request (403)')];
    const queue = shortLockQueue();
    await queue.send({ body: encodeTaskMessage(input()) });
    const out = collectingLog();
    await runOnClock(
      clock,
      new Worker({
        queue,
        processors: [processor],
        idleTimeoutInMs: 20,
        receiveWaitInMs: 0,
        maxIdleBackoffInMs: 1_000,
        log: out.log,
        clock,
      }),
    );
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
    expect(completions.sent).toEqual([
      expect.objectContaining({
        success: false,
        error: expect.stringMatching(/^gave up after 2 deliveries: could not read the upstream refs/),
      }),
    ]);
    expect(await queue.deadLetterQueue().approximateMessageCount()).toBe(1);
  });

  it('a task of a workflow this deployment does not know is dead-lettered after N deliveries, without a completion', async () => {
    const { completions, processor } = workflow({ isKnownWorkflow: () => Promise.resolve(false) });
    const queue = shortLockQueue();
    await queue.send({ body: encodeTaskMessage(input({ workflowId: 'wf-elsewhere' })) });
    const summary = await run(queue, [processor], { maxDeliveries: 3 });
    expect(completions.sendCalls).toBe(0);
    expect(queue.deadLetterReasons).toEqual([
      expect.stringMatching(/^gave up after 3 deliveries: workflow "wf-elsewhere" is not in this worker's deployment/),
    ]);
    expect(summary).toMatchObject({ left: 2, deadLettered: 1 });
  });
});

// The bound on real queues, in real time (2 s locks): the queue service counts the deliveries and
// keeps the dead-letter queue; on Service Bus that is the native one, the reason in DeadLetterReason.
describe.each(realQueueBackends())('the delivery bound on $label', (backend) => {
  beforeAll(() => backend.start());
  afterAll(() => backend.stop());

  /** Runs a worker (real clock) on `queue` until it has dead-lettered a message; its summary. */
  async function runUntilDeadLettered(queue: WrappedQueue, processors: Processor[], options: Partial<WorkerOptions> = {}) {
    const worker = new Worker({
      queue,
      processors,
      idleTimeoutInMs: null,
      receiveWaitInMs: 50,
      maxIdleBackoffInMs: 100,
      log: () => undefined,
      ...options,
    });
    const running = worker.run();
    await waitFor(() => queue.deadLetterReasons.length > 0, 20_000);
    await worker.stop({ gracePeriodInMs: 0 });
    return running;
  }

  /** The reasons the queue's dead-letter queue shows. */
  async function deadLetterReasons(queue: TaskQueue): Promise<unknown[]> {
    return (await queue.deadLetterQueue().peek(32)).map((m) => (JSON.parse(m.body) as { dead_letter_reason?: unknown }).dead_letter_reason);
  }

  /** Delivers the queue's one message `n` times, abandoning it each time (a worker that died with it, say). */
  async function spendDeliveries(queue: TaskQueue, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const [m] = await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 5_000 });
      expect(m?.deliveryCount).toBe(i + 1);
      await queue.abandon(m!);
    }
  }

  it('a message delivered more than N times is not run: giveUp, then the dead-letter queue with the reason', async () => {
    const queue = new WrappedQueue(await backend.open());
    await queue.send(task('t-over', { cmd: 'true' }));
    await spendDeliveries(queue, 3);
    const { processor, processed, givenUp } = leaver();
    const summary = await runUntilDeadLettered(queue, [processor], { maxDeliveries: 3 });
    const reason = 'gave up after 4 deliveries: the limit is 3 (JOBQ_MAX_DELIVERIES)';
    expect(processed).toEqual([]);
    expect(givenUp).toEqual([{ delivery: 4, reason }]);
    expect(summary).toMatchObject({ processed: 1, deadLettered: 1 });
    expect(await queue.approximateMessageCount()).toBe(0);
    expect(await deadLetterReasons(queue)).toEqual([reason]);
  });

  it('a message left until its lock runs out comes back one delivery up; left at delivery N it is dead-lettered', async () => {
    const queue = new WrappedQueue(await backend.open(2_000));
    await queue.send(task('t-left', { cmd: 'true' }));
    const { processor, processed, givenUp } = leaver();
    const summary = await runUntilDeadLettered(queue, [processor], { maxDeliveries: 2 });
    const reason = 'gave up after 2 deliveries: the thing it needs is not there yet';
    expect(processed).toEqual([1, 2]);
    expect(givenUp).toEqual([{ delivery: 2, reason }]);
    expect(summary).toMatchObject({ processed: 2, left: 1, deadLettered: 1 });
    expect(await deadLetterReasons(queue)).toEqual([reason]);
  });

  if (backend.kind === 'servicebus') {
    it("the queues jobq creates have MaxDeliveryCount 1 000: the worker's bound (20 by default) dead-letters first, not the broker's", async () => {
      const sb = backend.serviceBus;
      const queue = new WrappedQueue(await backend.open());
      expect(sb.registry.get(queue.name)?.properties.maxDeliveryCount).toBe(1_000);
      await queue.send(task('t-twenty', { cmd: 'true' }));
      await spendDeliveries(queue, 20);
      const { processor, processed, givenUp } = leaver();
      await runUntilDeadLettered(queue, [processor]);
      const reason = 'gave up after 21 deliveries: the limit is 20 (JOBQ_MAX_DELIVERIES)';
      expect(processed).toEqual([]);
      expect(givenUp).toEqual([{ delivery: 21, reason }]);
      expect(await deadLetterReasons(queue)).toEqual([reason]);
      const stats = sb.stats().queues[queue.name]!;
      expect({
        deadLetter: stats.deadLetter,
        byTheWorker: stats.dispositions.deadLetter,
        byTheBroker: stats.autoDeadLetters.maxDeliveryCount,
      }).toEqual({
        deadLetter: 1,
        byTheWorker: 1,
        byTheBroker: 0,
      });

      // On a queue with the service's default MaxDeliveryCount (10), the broker would have got there first.
      const name = `${queue.name}-default`;
      sb.declareQueue(name);
      const plain = await backend.reopen(name);
      await plain.send(task('t-ten', { cmd: 'true' }));
      await spendDeliveries(plain, 10);
      expect(await plain.receive({ maxMessages: 1, maxWaitTimeInMs: 200 })).toEqual([]);
      expect(await deadLetterReasons(plain)).toEqual([expect.stringMatching(/^MaxDeliveryCountExceeded/)]);
    });
  }
});
