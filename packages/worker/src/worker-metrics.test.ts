import { describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTaskMessage } from '@jobq/dag-core/wire';
import { MemoryTaskQueue } from '@jobq/memory';
import { JobqError, VirtualClock, type Instruments } from '@jobq/ports';
import type { Processor } from './processor';
import type { RunShellOptions, ShellResult } from './subprocess';
import { memoryOutputs, RecordingCompletions } from './test-helpers/memory-workflow';
import { runOnClock, task, WrappedQueue } from './test-helpers/worker-helpers';
import { Worker } from './worker';
import { WorkflowProcessor } from './workflow-processor';

// What the worker records through `Instruments` (docs/metrics.md), on a virtual clock.

type Call = [kind: 'inc' | 'observe' | 'set', name: string, labels: Record<string, string>, value: number];

function recording(): { instruments: Instruments; calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    instruments: {
      enabled: true,
      inc: (name, labels, value = 1) => void calls.push(['inc', name, { ...labels }, value]),
      observe: (name, labels, value) => void calls.push(['observe', name, { ...labels }, value]),
      set: (name, labels, value) => void calls.push(['set', name, { ...labels }, value]),
    },
  };
}

describe('Worker metrics', () => {
  it('records slots, busy slots, receive errors by code, queue wait and task run time by outcome', async () => {
    const clock = new VirtualClock();
    const queue = new WrappedQueue(new MemoryTaskQueue({ name: 'mem-cpu', lockDurationInMs: 30_000, clock }));
    await queue.send(task('ok', { cmd: 'ok' }));
    await queue.send(task('bad', { cmd: 'bad' }));
    await clock.advance(4_000); // waited in the queue
    queue.failReceives = 1;
    const processor: Processor = {
      name: 'timed',
      accepts: () => true,
      process: async (context) => {
        await clock.sleep(3_000, context.signal);
        return context.envelope.id === 'ok' ? { kind: 'done' } : { kind: 'failed', error: 'no' };
      },
    };
    const { instruments, calls } = recording();
    const worker = new Worker({
      queue,
      processors: [processor],
      numWorkers: 2,
      clock,
      idleTimeoutInMs: 1_000,
      receiveWaitInMs: 100,
      log: () => undefined,
      instruments,
      queueLabel: 'cpu',
    });
    let done = false;
    void worker.run().then(() => (done = true));
    await clock.runUntil(() => done);

    expect(calls.filter(([, name]) => name === 'jobq_worker_slots')).toEqual([['set', 'jobq_worker_slots', { queue: 'cpu' }, 2]]);
    const busy = calls.filter(([, name]) => name === 'jobq_worker_slots_busy').map(([, , , v]) => v);
    expect(Math.max(...busy)).toBe(2);
    expect(busy.at(-1)).toBe(0);
    expect(calls.filter(([, name]) => name === 'jobq_worker_receive_errors_total')).toEqual([
      ['inc', 'jobq_worker_receive_errors_total', { queue: 'cpu', code: 'unavailable' }, 1],
    ]);
    const waits = calls.filter(([, name]) => name === 'jobq_worker_task_queue_wait_seconds');
    expect(waits).toHaveLength(2);
    for (const [, , labels, value] of waits) {
      expect(labels).toEqual({ queue: 'cpu' });
      expect(value).toBeGreaterThanOrEqual(4);
    }
    const durations = calls
      .filter(([, name]) => name === 'jobq_worker_task_duration_seconds')
      .map(([, , labels, value]) => [labels.outcome, value]);
    expect(durations.sort()).toEqual([
      ['done', 3],
      ['failed', 3],
    ]);
  });

  it('a workflow task whose command failed is recorded as failed, and each failed log upload is counted by queue', async () => {
    const clock = new VirtualClock();
    const tempDir = await mkdtemp(join(tmpdir(), 'jobq-metrics-'));
    try {
      const queue = new MemoryTaskQueue({ name: 'mem-cpu', lockDurationInMs: 30_000, clock });
      for (const taskName of ['ok', 'bad'])
        await queue.send({ body: encodeTaskMessage({ workflowId: 'wf-m', taskName, attemptNo: 1, kwargs: { cmd: 'true' } }) });
      const outputs = memoryOutputs();
      outputs.failLogs = new JobqError('unavailable', 'the storage service could not be reached');
      // Each task prints one line (so each tries one log upload); "bad" exits 1.
      const runCommand = (options: RunShellOptions): Promise<ShellResult> => {
        options.onLine?.('stdout', 'hello');
        const exitCode = options.env.JOBQ_WORKFLOW_TASK === 'bad' ? 1 : 0;
        return Promise.resolve({ exitCode, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null });
      };
      const completions = new RecordingCompletions();
      const processor = new WorkflowProcessor({
        outputs,
        completions,
        isCancelled: () => Promise.resolve(false),
        env: { PATH: process.env.PATH, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Metrics' },
        killTimeoutInMs: 1_000,
        completionBackoff: { initialInMs: 1, maxInMs: 2 },
        cancelPollIntervalInMs: 24 * 3600_000,
        clock,
        tempDir,
        runCommand,
      });
      const { instruments, calls } = recording();
      const worker = new Worker({
        queue,
        processors: [processor],
        numWorkers: 2,
        clock,
        idleTimeoutInMs: 1_000,
        receiveWaitInMs: 100,
        log: () => undefined,
        instruments,
        queueLabel: 'cpu',
      });
      await runOnClock(clock, worker);

      expect(completions.sent.map((c) => [c.taskName, c.success]).sort()).toEqual([
        ['bad', false],
        ['ok', true],
      ]);
      const outcomes = calls.filter(([, name]) => name === 'jobq_worker_task_duration_seconds').map(([, , labels]) => labels.outcome);
      expect(outcomes.sort()).toEqual(['done', 'failed']);
      expect(calls.filter(([, name]) => name === 'jobq_worker_task_log_upload_failures_total')).toEqual([
        ['inc', 'jobq_worker_task_log_upload_failures_total', { queue: 'cpu' }, 1],
        ['inc', 'jobq_worker_task_log_upload_failures_total', { queue: 'cpu' }, 1],
      ]);
      expect(processor.taskLogCounters.failures).toBe(2);
      // Both messages were deleted: a failed workflow task is settled like a succeeded one.
      expect(await queue.approximateMessageCount()).toBe(0);
    } finally {
      await rm(tempDir, { recursive: true, force: true });
    }
  });
});
