import { describe, expect, it } from '@jest/globals';
import { MemoryTaskQueue } from '@jobq/memory';
import { JobqError, VirtualClock } from '@jobq/ports';
import { CancelFlagCache } from './cancel-flag';
import { setLongTimeout } from './long-timer';
import type { Processor } from './processor';
import { ShellProcessor } from './shell-processor';
import { runShell, type ShellResult } from './subprocess';
import { memoryOutputs, RecordingCompletions } from './test-helpers/memory-workflow';
import { workflowContext } from './test-helpers/workflow-fixtures';
import { task, WrappedQueue } from './test-helpers/worker-helpers';
import { Worker } from './worker';
import { WorkflowProcessor } from './workflow-processor';

// Every timer and time read of the worker goes through its clock: on a VirtualClock the lock
// renewals, the stop grace, the idle timeout and back-off, the cancel poll, the cancel-flag cache
// and the completion back-off all happen in virtual time, at exactly their moment.

const DAY = 24 * 3_600_000;

/** A processor that works for `ms` of the clock's time (or until stopped), then succeeds. */
function busy(clock: VirtualClock, ms: number, seen: { stopped?: unknown; endedAt?: number } = {}): Processor {
  return {
    name: 'busy',
    accepts: () => true,
    process: async (context) => {
      await clock.sleep(ms, context.signal);
      seen.endedAt = clock.now();
      if (context.signal.aborted) {
        seen.stopped = context.signal.reason;
        return { kind: 'failed', error: 'stopped' };
      }
      return { kind: 'done' };
    },
  };
}

describe('Worker on a virtual clock', () => {
  it('renews the lock every half lock while a task runs three lock durations; the message never comes back', async () => {
    const clock = new VirtualClock();
    const queue = new WrappedQueue(new MemoryTaskQueue({ lockDurationInMs: 30_000, clock }));
    await queue.send(task('t-long', { cmd: 'true' }));
    const seen: { endedAt?: number } = {};
    const start = clock.now();
    const worker = new Worker({
      queue,
      processors: [busy(clock, 90_000, seen)],
      clock,
      idleTimeoutInMs: 1_000,
      receiveWaitInMs: 100,
      log: () => undefined,
    });
    let summary: unknown;
    void worker.run().then((s) => (summary = s));
    await clock.runUntil(() => summary !== undefined);
    expect(summary).toMatchObject({ processed: 1, succeeded: 1, lockLost: 0 });
    expect(seen.endedAt).toBe(start + 90_000);
    expect(queue.renewCalls).toBe(5); // at 15, 30, 45, 60, 75 s
    expect(queue.completeCalls).toBe(1);
    expect(await queue.approximateMessageCount()).toBe(0);
  });

  it('aborts a task still running at the end of the stop grace period, at that moment, and gives its message back', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ clock });
    await queue.send(task('t-grace', { cmd: 'true' }));
    const seen: { stopped?: unknown; endedAt?: number } = {};
    const worker = new Worker({
      queue,
      processors: [busy(clock, 60_000, seen)],
      clock,
      idleTimeoutInMs: null,
      gracePeriodInMs: 10_000,
      log: () => undefined,
    });
    let summary: unknown;
    void worker.run().then((s) => (summary = s));
    await clock.advance(5_000);
    const stoppedAt = clock.now();
    void worker.stop();
    await clock.runUntil(() => summary !== undefined);
    expect(seen).toEqual({ stopped: 'shutdown', endedAt: stoppedAt + 10_000 });
    expect(summary).toMatchObject({ abandoned: 1, succeeded: 0 });
    expect(queue.counts()).toEqual({ messages: 1, visible: 1, held: 0, delayed: 0 });
  });

  it('drains: SIGTERM to a task group at the end of the grace, SIGKILL after the shutdown kill timeout (not JOBQ_KILL_TIMEOUT), message given back', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ clock });
    // Ignores SIGTERM (and so does its sleep): only the SIGKILL ends it.
    await queue.send(task('t-drain', { cmd: "trap '' TERM; echo up $$; sleep 300" }));
    const lines: string[] = [];
    let group = 0;
    const processor = new ShellProcessor({
      killTimeoutInMs: 600_000,
      shutdownKillTimeoutInMs: 1_000,
      clock,
      baseEnv: { PATH: process.env.PATH },
    });
    const worker = new Worker({
      queue,
      processors: [processor],
      clock,
      idleTimeoutInMs: null,
      gracePeriodInMs: 2_000,
      receiveWaitInMs: 0,
      log: (line) => {
        lines.push(line);
        const up = / up (\d+)$/.exec(line);
        if (up) group = Number(up[1]);
      },
    });
    let summary: unknown;
    void worker.run().then((s) => (summary = s));
    expect(await clock.advanceUntil(() => group > 0, { withinMs: 0 })).toBe(true);
    const alive = () => {
      try {
        process.kill(-group, 0);
        return true;
      } catch {
        return false;
      }
    };
    void worker.stop();
    // The grace ends at 2 s (SIGTERM, ignored); no SIGKILL before 3 s.
    await clock.advance(2_999);
    await new Promise((r) => setTimeout(r, 200));
    expect(alive()).toBe(true);
    expect(summary).toBeUndefined();
    // At 3 s the group gets SIGKILL: the run ends without any more virtual time (not at 600 s, JOBQ_KILL_TIMEOUT).
    await clock.advance(1);
    expect(await clock.advanceUntil(() => summary !== undefined, { withinMs: 0, realWaitInMs: 30_000 })).toBe(true);
    expect(alive()).toBe(false);
    expect(summary).toMatchObject({ processed: 1, abandoned: 1, succeeded: 0, failed: 0 });
    expect(lines.some((l) => l.includes('stopped by shutdown (stopped (killed after the grace period) (shutdown)); abandoning'))).toBe(
      true,
    );
    expect(queue.counts()).toMatchObject({ messages: 1, visible: 1, held: 0 });
  });

  it('backs off between empty receives (100, 200, 400 ms …) and stops at the idle timeout, in virtual time', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ clock });
    const at: number[] = [];
    const receive = queue.receive.bind(queue);
    queue.receive = (options) => {
      at.push(clock.now() - start);
      return receive(options);
    };
    const start = clock.now();
    let done = false;
    void new Worker({
      queue,
      processors: [],
      clock,
      idleTimeoutInMs: 1_500,
      receiveWaitInMs: 0,
      maxIdleBackoffInMs: 5_000,
      log: () => undefined,
    })
      .run()
      .then(() => (done = true));
    await clock.runUntil(() => done);
    expect(at).toEqual([0, 100, 300, 700, 1_500]);
    expect(clock.now() - start).toBe(1_500);
  });

  it('after a task ends, receives at once and backs off from 100 ms again, however long the back-off grew while it ran', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ clock });
    const start = clock.now();
    const at: number[] = [];
    const receive = queue.receive.bind(queue);
    queue.receive = (options) => {
      at.push(clock.now() - start);
      return receive(options);
    };
    const started: Record<string, number> = {};
    const processor: Processor = {
      name: 'timed',
      accepts: () => true,
      process: async (context) => {
        started[context.envelope.id] = clock.now() - start;
        if (context.envelope.id === 'parent') await clock.sleep(10_000, context.signal);
        return { kind: 'done' };
      },
    };
    await queue.send(task('parent', { cmd: 'true' }));
    const worker = new Worker({
      queue,
      processors: [processor],
      numWorkers: 2,
      clock,
      receiveWaitInMs: 0,
      maxIdleBackoffInMs: 60_000,
      log: () => undefined,
    });
    const done = worker.run();
    // The parent runs 10 s while the other slot's empty receives back off: 100, 200, … 6 400 ms.
    await clock.advance(10_000);
    expect(at.filter((t) => t < 10_000)).toEqual([0, 0, 100, 300, 700, 1_500, 3_100, 6_300]);
    // Its child arrives 50 ms after it ended: the receive at its end was empty, the next comes 100 ms later (not 12 800 ms).
    await clock.advance(50);
    await queue.send(task('child', { cmd: 'true' }));
    await clock.runUntil(() => started.child !== undefined);
    expect(at.filter((t) => t >= 10_000).slice(0, 2)).toEqual([10_000, 10_100]);
    expect(started.child).toBe(10_100);
    await worker.stop();
    await done;
  });

  it('retries a receive that fails with back-off on the clock', async () => {
    const clock = new VirtualClock();
    const queue = new WrappedQueue(new MemoryTaskQueue({ clock }));
    queue.failReceives = 3;
    await queue.send(task('t-after-outage', { cmd: 'true' }));
    const lines: string[] = [];
    let summary: unknown;
    const start = clock.now();
    void new Worker({
      queue,
      processors: [busy(clock, 0)],
      clock,
      idleTimeoutInMs: 500,
      receiveWaitInMs: 0,
      log: (l) => lines.push(`${clock.now() - start} ${l}`),
    })
      .run()
      .then((s) => (summary = s));
    await clock.runUntil(() => summary !== undefined);
    expect(summary).toMatchObject({ succeeded: 1 });
    expect(lines.filter((l) => l.includes('simulated outage'))).toEqual([
      '0 receive from queue "memory" failed: receive: simulated outage; retrying in 100 ms',
      '100 receive from queue "memory" failed: receive: simulated outage; retrying in 200 ms',
      '300 receive from queue "memory" failed: receive: simulated outage; retrying in 400 ms',
    ]);
  });
});

describe('long timers and the task time limit on a virtual clock', () => {
  it('setLongTimeout fires at its time, never when cleared, never for Infinity', async () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    setLongTimeout(() => fired.push(`30d@${clock.now()}`), 30 * DAY, clock);
    setLongTimeout(() => fired.push('cleared'), DAY, clock).clear();
    setLongTimeout(() => fired.push('never'), Number.POSITIVE_INFINITY, clock);
    const start = clock.now();
    await clock.advance(30 * DAY - 1);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual([`30d@${start + 30 * DAY}`]);
    await clock.runUntilIdle(365 * DAY);
    expect(fired).toHaveLength(1);
  });

  it('runShell stops a real process when its 30-day limit passes on the clock', async () => {
    const clock = new VirtualClock();
    let result: ShellResult | undefined;
    let started = false;
    void runShell({
      command: 'echo up; sleep 1000',
      env: { PATH: process.env.PATH },
      killTimeoutInMs: 60_000,
      timeoutInMs: 30 * DAY,
      clock,
      onLine: () => (started = true),
    }).then((r) => (result = r));
    expect(await clock.advanceUntil(() => started, { withinMs: 0 })).toBe(true);
    await clock.advance(30 * DAY - 1);
    await clock.settle();
    expect(result).toBeUndefined();
    await clock.advance(1);
    // The child ends on SIGTERM in real time; the 60 s kill delay is on the clock, which waits.
    expect(await clock.advanceUntil(() => result !== undefined, { withinMs: 0 })).toBe(true);
    expect(result).toMatchObject({ timedOut: true, killed: false, exitSignal: 'SIGTERM' });
  });
});

describe('WorkflowProcessor on a virtual clock', () => {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Clock' };

  it('polls the cancel flag on the clock, backs off completion sends on it, and stamps startedAt from it', async () => {
    const clock = new VirtualClock();
    let cancelled = false;
    let ranAt = 0;
    const completions = new RecordingCompletions();
    completions.failures = [new JobqError('unavailable', 'down'), new JobqError('unavailable', 'still down')];
    const processor = new WorkflowProcessor({
      outputs: memoryOutputs(),
      completions,
      isCancelled: () => Promise.resolve(cancelled),
      env,
      killTimeoutInMs: 1_000,
      cancelPollIntervalInMs: 30 * DAY,
      cancelPollJitter: 0,
      completionBackoff: { initialInMs: 1_000, maxInMs: 60_000 },
      clock,
      runCommand: (options) =>
        new Promise((resolve) => {
          ranAt = clock.now();
          cancelled = true; // the cancel arrives once the task runs
          options.signal?.addEventListener('abort', () =>
            resolve({ exitCode: null, exitSignal: 'SIGTERM', stopped: true, timedOut: false, killed: false, spawnError: null }),
          );
        }),
    });
    let outcome: unknown;
    void processor
      .process(workflowContext({ workflowId: 'wf-clock', taskName: 'a', attemptNo: 1, kwargs: { cmd: 'true' } }))
      .then((o) => (outcome = o));
    await clock.runUntil(() => outcome !== undefined, undefined, { withinMs: 31 * DAY });
    expect(outcome).toEqual({ kind: 'done', failed: true });
    // Stopped by the poll 30 days after the start; sent after two failed sends and 1 s + 2 s of back-off.
    expect(clock.now() - ranAt).toBe(30 * DAY + 3_000);
    expect(completions.sendCalls).toBe(3);
    expect(completions.sent).toEqual([
      expect.objectContaining({
        success: false,
        error: 'stopped: workflow cancelled',
        cancelled: true,
        startedAt: new Date(ranAt).toISOString(),
      }),
    ]);
  });

  it('a drain stops the task with the shutdown kill timeout and reports no outcome to the workflow: the worker gives the message back', async () => {
    const clock = new VirtualClock();
    const completions = new RecordingCompletions();
    let killAfter: number | undefined;
    const controller = new AbortController();
    const processor = new WorkflowProcessor({
      outputs: memoryOutputs(),
      completions,
      isCancelled: () => Promise.resolve(false),
      env,
      killTimeoutInMs: 600_000,
      shutdownKillTimeoutInMs: 1_000,
      cancelPollIntervalInMs: DAY,
      clock,
      runCommand: (options) =>
        new Promise((resolve) => {
          options.signal?.addEventListener('abort', () => {
            killAfter = options.signal?.reason === 'shutdown' ? options.shutdownKillTimeoutInMs : options.killTimeoutInMs;
            resolve({ exitCode: null, exitSignal: 'SIGKILL', stopped: true, timedOut: false, killed: true, spawnError: null });
          });
          controller.abort('shutdown');
        }),
    });
    const outcome = await processor.process(
      workflowContext({ workflowId: 'wf-drain', taskName: 'a', attemptNo: 1, kwargs: { cmd: 'sleep 300' } }, controller.signal),
    );
    expect(killAfter).toBe(1_000);
    expect(outcome).toEqual({ kind: 'failed', error: 'stopped: shutdown' });
    expect(completions.sent).toEqual([]);
  });

  it('the cancel-flag cache keeps a flag for its time to live on the clock', async () => {
    const clock = new VirtualClock();
    let asked = 0;
    const cache = new CancelFlagCache(() => Promise.resolve(asked++ < 0), { ttlInMs: 30_000, jitter: 0, now: () => clock.now() });
    await cache.isCancelled('wf');
    await clock.advance(29_999);
    await cache.isCancelled('wf');
    expect(asked).toBe(1);
    await clock.advance(1);
    await cache.isCancelled('wf');
    expect(asked).toBe(2);
  });
});
