import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryTaskQueue } from '@jobq/memory';
import { VirtualClock } from '@jobq/ports';
import type { TaskLine } from './log';
import type { Processor } from './processor';
import { ShellProcessor } from './shell-processor';
import { realQueueBackends } from './test-helpers/real-queues';
import { collectingLog, lines, runOnClock, task, tempDir, waitFor, WrappedQueue } from './test-helpers/worker-helpers';
import { Worker, type WorkerOptions, type WorkerSummary } from './worker';

const shell = () => new ShellProcessor({ killTimeoutInMs: 2_000 });

function fastWorker(options: Partial<WorkerOptions> & Pick<WorkerOptions, 'queue'>): Worker {
  return new Worker({
    processors: [shell()],
    idleTimeoutInMs: 400,
    receiveWaitInMs: 50,
    maxIdleBackoffInMs: 100,
    log: () => undefined,
    ...options,
  });
}

/**
 * The worker loop and the in-memory queue on a virtual clock (the idle timeout, back-off and locks
 * take no wall-clock time); processes, when a test runs some, run in real time, as does the shell
 * processor's kill delay.
 */
function virtual(): {
  clock: VirtualClock;
  queue: (options?: { lockDurationInMs?: number }) => MemoryTaskQueue;
  run: (options: Partial<WorkerOptions> & Pick<WorkerOptions, 'queue'>) => Promise<WorkerSummary>;
} {
  const clock = new VirtualClock();
  return {
    clock,
    queue: (options = {}) => new MemoryTaskQueue({ ...options, clock }),
    run: (options) => runOnClock(clock, fastWorker({ ...options, clock })),
  };
}

describe('Worker on the in-memory queue, in virtual time', () => {
  it('runs a plain task, completes it, and logs its stdout and stderr lines with the task id', async () => {
    const v = virtual();
    const queue = v.queue();
    await queue.send(task('t-ok', { cmd: 'echo hello; echo oops >&2' }));
    const out = collectingLog();
    const summary = await v.run({ queue, log: out.log });
    expect(summary).toMatchObject({ processed: 1, succeeded: 1, failed: 0, deadLettered: 0 });
    expect(await queue.approximateMessageCount()).toBe(0);
    expect(out.lines).toEqual(expect.arrayContaining(['[t-ok] hello', '[t-ok] oops', '[t-ok] done']));
    expect(out.lines.filter((l) => l.includes('[t-ok] [t-ok]'))).toEqual([]);
  });

  it("with taskLines: hands each line the task printed (with its stream) and the worker's own lines about it there, not to the log", async () => {
    const v = virtual();
    const queue = v.queue();
    await queue.send(task('t-lines', { cmd: 'echo hello; printf "partial" >&2' }));
    const out = collectingLog();
    const taskLines: TaskLine[] = [];
    await v.run({ queue, log: out.log, taskLines: (line) => taskLines.push(line) });
    const ref = { id: 't-lines', workflowTask: null };
    expect(taskLines).toEqual(
      expect.arrayContaining([
        { task: ref, stream: 'stdout', text: 'hello' },
        { task: ref, stream: 'stderr', text: 'partial' },
        { task: ref, stream: null, text: 'done' },
      ]),
    );
    expect(out.lines.filter((l) => l.includes('t-lines'))).toEqual([]);
  });

  it('retries a failing task num_retries times, then dead-letters it', async () => {
    const { dir, cleanup } = tempDir();
    const v = virtual();
    const queue = v.queue();
    await queue.send(task('t-fail', { cmd: `echo run >> ${dir}/runs; exit 3` }, 1));
    const out = collectingLog();
    const summary = await v.run({ queue, log: out.log });
    expect(lines(join(dir, 'runs'))).toHaveLength(2);
    expect(summary).toMatchObject({ processed: 2, failed: 2, abandoned: 1, deadLettered: 1 });
    expect(await queue.approximateMessageCount()).toBe(0);
    expect(await queue.deadLetterQueue().approximateMessageCount()).toBe(1);
    expect(out.lines.some((l) => l.includes('exit code 3'))).toBe(true);
    cleanup();
  });

  it('dead-letters a body that is not an envelope at once, and a task no processor accepts', async () => {
    const v = virtual();
    const queue = v.queue();
    await queue.send([{ body: 'not json' }, task('wf', { __workflow_id: 'w', __workflow_task: 'a' })]);
    const out = collectingLog();
    const summary = await v.run({ queue, log: out.log });
    expect(summary).toMatchObject({ processed: 2, deadLettered: 2, failed: 0 });
    expect(await queue.deadLetterQueue().approximateMessageCount()).toBe(2);
    expect(out.lines.some((l) => l.includes('poison message'))).toBe(true);
    expect(out.lines.some((l) => l.includes('no processor accepts'))).toBe(true);
  });

  it('counts a processor that throws as a failure', async () => {
    const v = virtual();
    const queue = v.queue();
    await queue.send(task('t-throw', { x: 1 }));
    const thrower: Processor = { name: 'thrower', accepts: () => true, process: () => Promise.reject(new Error('boom')) };
    const out = collectingLog();
    const summary = await v.run({ queue, processors: [thrower], log: out.log });
    expect(summary).toMatchObject({ failed: 1, deadLettered: 1 });
    expect(out.lines.some((l) => l.includes('threw: boom'))).toBe(true);
  });

  it('keeps one task env out of the next task and out of process.env', async () => {
    const { dir, cleanup } = tempDir();
    const v = virtual();
    const queue = v.queue();
    await queue.send(task('t-env1', { cmd: `echo "$JOBQ_TEST_LEAK" >> ${dir}/env`, env: { JOBQ_TEST_LEAK: 'secret' } }));
    await queue.send(task('t-env2', { cmd: `echo "\${JOBQ_TEST_LEAK-unset}" >> ${dir}/env` }));
    const summary = await v.run({ queue });
    expect(summary.succeeded).toBe(2);
    expect(lines(join(dir, 'env'))).toEqual(['secret', 'unset']);
    expect(process.env.JOBQ_TEST_LEAK).toBeUndefined();
    cleanup();
  });

  it('resolves run() after the idle timeout, backing off between empty receives', async () => {
    const v = virtual();
    const slow = new WrappedQueue(v.queue());
    const fast = new WrappedQueue(v.queue());
    // Same window (1.5 s idle timeout, receives return at once): back-off up to 5 s vs capped at 20 ms.
    await Promise.all([
      runOnClock(
        v.clock,
        new Worker({
          queue: slow,
          processors: [],
          idleTimeoutInMs: 1_500,
          receiveWaitInMs: 0,
          maxIdleBackoffInMs: 5_000,
          log: () => undefined,
          clock: v.clock,
        }),
      ),
      runOnClock(
        v.clock,
        new Worker({
          queue: fast,
          processors: [],
          idleTimeoutInMs: 1_500,
          receiveWaitInMs: 0,
          maxIdleBackoffInMs: 20,
          log: () => undefined,
          clock: v.clock,
        }),
      ),
    ]);
    expect(slow.receiveCalls).toBe(5); // at 0, 100, 300, 700 ms, then at the timeout (1.5 s)
    expect(fast.receiveCalls).toBe(1_500 / 20 + 1); // every 20 ms from 0 to 1.5 s
  });

  it('logs and retries transient receive errors', async () => {
    const v = virtual();
    const queue = new WrappedQueue(v.queue());
    queue.failReceives = 3;
    await queue.send(task('t-after-outage', { cmd: 'true' }));
    const out = collectingLog();
    const summary = await v.run({ queue, log: out.log });
    expect(summary.succeeded).toBe(1);
    expect(out.lines.filter((l) => l.includes('simulated outage'))).toHaveLength(3);
  });

  it('runs numWorkers tasks at the same time', async () => {
    const { dir, cleanup } = tempDir();
    const v = virtual();
    const queue = v.queue();
    // Each task waits until all three have started: only concurrent slots can finish them.
    const cmd = (n: number) =>
      `touch ${dir}/s${n}; for i in $(seq 100); do [ -f ${dir}/s1 ] && [ -f ${dir}/s2 ] && [ -f ${dir}/s3 ] && exit 0; sleep 0.05; done; exit 1`;
    await queue.send([1, 2, 3].map((n) => task(`t-par${n}`, { cmd: cmd(n) })));
    const summary = await v.run({ queue, numWorkers: 3 });
    expect(summary).toMatchObject({ succeeded: 3, failed: 0 });
    cleanup();
  });

  it('asks for as many messages as it has free slots, never more, and takes several per call', async () => {
    const v = virtual();
    const queue = v.queue();
    const asked: number[] = [];
    const got: number[] = [];
    const receive = queue.receive.bind(queue);
    queue.receive = async (options) => {
      const messages = await receive(options);
      if (messages.length > 0) {
        asked.push(options.maxMessages);
        got.push(messages.length);
      }
      return messages;
    };
    let running = 0;
    let peak = 0;
    const gate: Processor = {
      name: 'gate',
      accepts: () => true,
      process: async () => {
        peak = Math.max(peak, ++running);
        await v.clock.sleep(30);
        running--;
        return { kind: 'done' };
      },
    };
    await queue.send(Array.from({ length: 8 }, (_, n) => task(`t-batch${n}`, { cmd: 'true' })));
    const summary = await v.run({ queue, numWorkers: 4, processors: [gate] });
    expect(summary).toMatchObject({ succeeded: 8, failed: 0 });
    expect(peak).toBe(4);
    expect(Math.max(...asked)).toBe(4);
    expect(got.reduce((a, b) => a + b, 0)).toBe(8);
    // The first call fills all four slots; later ones take what freed up together (not one per task).
    expect(got[0]).toBe(4);
    expect(got.length).toBeLessThanOrEqual(4);
  });

  it('frees a slot once its task has run: the next task starts while the message is still being completed (at most twice the slots at once), and run() waits for the completions', async () => {
    const v = virtual();
    const queue = v.queue();
    // Every complete takes 1 s of (virtual) time; the tasks themselves take none.
    const complete = queue.complete.bind(queue);
    let completing = 0;
    let peakCompleting = 0;
    queue.complete = async (message, options) => {
      peakCompleting = Math.max(peakCompleting, ++completing);
      await v.clock.sleep(1_000);
      completing--;
      return complete(message, options);
    };
    const started: number[] = [];
    const quick: Processor = {
      name: 'quick',
      accepts: () => true,
      process: () => {
        started.push(v.clock.now());
        return Promise.resolve({ kind: 'done' });
      },
    };
    await queue.send(Array.from({ length: 3 }, (_, n) => task(`t-settle${n}`, { cmd: 'true' })));
    const t0 = v.clock.now();
    const summary = await v.run({ queue, numWorkers: 1, processors: [quick] });
    expect(summary).toMatchObject({ succeeded: 3, failed: 0 });
    // One slot: the second task ran at once, while the first was still being completed; the third
    // waited for a completion to come back (at most twice the slots are being settled).
    expect(started.map((t) => t - t0)).toEqual([0, 0, 1_000]);
    expect(peakCompleting).toBe(2);
    // run() resolved only after every message was completed.
    expect(completing).toBe(0);
    expect(await queue.approximateMessageCount()).toBe(0);
  });
});

// These race child processes against the worker's timers (a lock renewal, the stop grace), so both
// run in real time.
describe('Worker on the in-memory queue, in real time', () => {
  it('stops the subprocess when the lock is lost, and does not settle the message', async () => {
    const { dir, cleanup } = tempDir();
    const inner = new MemoryTaskQueue({ lockDurationInMs: 400 });
    const queue = new WrappedQueue(inner);
    queue.loseLocks = true;
    queue.deliverAtMost = 1;
    await queue.send(
      task('t-lost', { cmd: `trap 'echo term > ${dir}/term; exit 143' TERM; echo started > ${dir}/started; sleep 30 & wait $!` }),
    );
    const summary = await fastWorker({ queue }).run();
    expect(lines(join(dir, 'term'))).toEqual(['term']);
    expect(summary).toMatchObject({ processed: 1, lockLost: 1, succeeded: 0, failed: 0, abandoned: 0 });
    expect(queue.completeCalls + queue.abandonCalls).toBe(0);
    expect(await inner.approximateMessageCount()).toBe(1); // still there, redelivered later
    cleanup();
  });

  it('stop() lets a task that ends within the grace period complete', async () => {
    const { dir, cleanup } = tempDir();
    const queue = new MemoryTaskQueue();
    await queue.send(task('t-grace', { cmd: `touch ${dir}/started; sleep 0.5; echo ok > ${dir}/done` }));
    const worker = fastWorker({ queue, idleTimeoutInMs: null, gracePeriodInMs: 5_000 });
    const running = worker.run();
    await waitFor(() => existsSync(join(dir, 'started')));
    await worker.stop();
    const summary = await running;
    expect(summary).toMatchObject({ succeeded: 1, abandoned: 0 });
    expect(await queue.approximateMessageCount()).toBe(0);
    expect(lines(join(dir, 'done'))).toEqual(['ok']);
    cleanup();
  });

  it('installSignalHandlers: SIGTERM stops gracefully; a second SIGINT aborts running tasks now', async () => {
    const { dir, cleanup } = tempDir();
    const queue = new MemoryTaskQueue();
    await queue.send(task('t-sig', { cmd: `trap 'echo term > ${dir}/term; exit 143' TERM; touch ${dir}/started; sleep 30 & wait $!` }));
    const worker = fastWorker({ queue, idleTimeoutInMs: null, gracePeriodInMs: 30_000 });
    const listenersBefore = process.listenerCount('SIGTERM') + process.listenerCount('SIGINT');
    const remove = worker.installSignalHandlers();
    try {
      const running = worker.run();
      await waitFor(() => existsSync(join(dir, 'started')));
      process.emit('SIGINT', 'SIGINT');
      expect(worker.stopping).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(existsSync(join(dir, 'term'))).toBe(false); // still within the grace period
      process.emit('SIGINT', 'SIGINT');
      const summary = await running;
      expect(summary).toMatchObject({ abandoned: 1, failed: 0 });
      expect(lines(join(dir, 'term'))).toEqual(['term']);
      expect(await queue.approximateMessageCount()).toBe(1);
    } finally {
      remove();
      cleanup();
    }
    expect(process.listenerCount('SIGTERM') + process.listenerCount('SIGINT')).toBe(listenersBefore);
  });
});

describe.each(realQueueBackends())('Worker on $label', (backend) => {
  const open = (lockDurationInMs = 2_000) => backend.open(lockDurationInMs);

  beforeAll(() => backend.start());
  afterAll(() => backend.stop());

  it('completes a task, retries then dead-letters a failing one, and dead-letters poison once', async () => {
    const { dir, cleanup } = tempDir();
    const queue = await open();
    await queue.send([
      task('a-ok', { cmd: `echo ok >> ${dir}/ok` }),
      task('a-fail', { cmd: `echo run >> ${dir}/fail; exit 1` }, 1),
      { body: '{"hello":"world"}' },
    ]);
    const summary = await fastWorker({ queue, idleTimeoutInMs: 800 }).run();
    expect(lines(join(dir, 'ok'))).toHaveLength(1);
    expect(lines(join(dir, 'fail'))).toHaveLength(2);
    expect(summary).toMatchObject({ processed: 4, succeeded: 1, failed: 2, abandoned: 1, deadLettered: 2 });
    expect(await queue.approximateMessageCount()).toBe(0);
    // Each dead-letter copy is the original JSON object plus its "dead_letter_reason".
    const dead = (await queue.deadLetterQueue().peek(32)).map((m) => JSON.parse(m.body) as Record<string, unknown>);
    expect(dead.every((copy) => typeof copy.dead_letter_reason === 'string')).toBe(true);
    const originals = dead.map(({ dead_letter_reason: _reason, ...original }) => original);
    expect(originals).toHaveLength(2);
    expect(originals).toEqual(
      expect.arrayContaining([JSON.parse(task('a-fail', { cmd: `echo run >> ${dir}/fail; exit 1` }, 1).body), { hello: 'world' }]),
    );
    cleanup();
  });

  it('renews the lock so a task running 3× the lock duration stays hidden from a second worker', async () => {
    const { dir, cleanup } = tempDir();
    const queue = await open(2_000);
    const other = await backend.reopen(queue.name, 2_000);
    await queue.send(task('a-long', { cmd: `echo run >> ${dir}/runs; sleep 6` }));
    const first = fastWorker({ queue, idleTimeoutInMs: 1_000 });
    const firstRun = first.run();
    await waitFor(() => existsSync(join(dir, 'runs')));
    const second = await fastWorker({ queue: other, idleTimeoutInMs: 7_000 }).run();
    const summary = await firstRun;
    expect(second.processed).toBe(0);
    expect(summary).toMatchObject({ processed: 1, succeeded: 1, lockLost: 0 });
    expect(lines(join(dir, 'runs'))).toHaveLength(1);
    expect(await queue.approximateMessageCount()).toBe(0);
    cleanup();
  });

  it('stop(): a task that outlives the grace period is stopped and abandoned, and a new worker gets it', async () => {
    const { dir, cleanup } = tempDir();
    const queue = await open(2_000);
    const cmd = `if [ -f ${dir}/first ]; then echo second >> ${dir}/runs; exit 0; fi; touch ${dir}/first; trap 'echo term > ${dir}/term; exit 143' TERM; sleep 30 & wait $!`;
    await queue.send(task('a-shutdown', { cmd }));
    const out = collectingLog();
    const worker = fastWorker({ queue, idleTimeoutInMs: null, gracePeriodInMs: 300, log: out.log });
    const running = worker.run();
    await waitFor(() => existsSync(join(dir, 'first')));
    await worker.stop();
    const summary = await running;
    expect(summary).toMatchObject({ processed: 1, abandoned: 1, succeeded: 0, lockLost: 0 });
    expect(lines(join(dir, 'term'))).toEqual(['term']);
    const again = await fastWorker({ queue, idleTimeoutInMs: 500 }).run();
    expect(again).toMatchObject({ processed: 1, succeeded: 1 });
    expect(lines(join(dir, 'runs'))).toEqual(['second']);
    cleanup();
  });
});
