import { describe, expect, it } from '@jest/globals';
import { MemoryTaskQueue, MemoryWorkerRegistry } from '@jobq/memory';
import { JobqError, VirtualClock, workerState } from '@jobq/ports';
import type { Processor } from './processor';
import { task } from './test-helpers/worker-helpers';
import { Worker } from './worker';

const INTERVAL = 30_000;
const quiet = (): void => undefined;

/** A processor that works for `ms` of the clock's time (or until stopped), then succeeds. */
function busy(clock: VirtualClock, ms: number): Processor {
  return {
    name: 'busy',
    accepts: () => true,
    process: async (context) => {
      await clock.sleep(ms, context.signal);
      return context.signal.aborted ? { kind: 'failed', error: 'stopped' } : { kind: 'done' };
    },
  };
}

describe('worker heartbeats on a virtual clock', () => {
  it('writes one row request at start and one per interval, and deletes the row on a clean stop', async () => {
    const clock = new VirtualClock();
    const registry = new MemoryWorkerRegistry({ clock });
    const queue = new MemoryTaskQueue({ clock, name: 'cpu' });
    const worker = new Worker({
      queue,
      processors: [busy(clock, 1)],
      clock,
      log: quiet,
      heartbeat: { registry, intervalInMs: INTERVAL, queueSpec: 'cpu', version: '9.9.9' },
    });
    const run = worker.run();
    await clock.advance(0);
    expect(registry.calls.beat).toBe(1);
    const [row] = await registry.list();
    expect(row).toMatchObject({ workerId: worker.workerId, version: '9.9.9', intervalInMs: INTERVAL, stopping: false, pid: process.pid });
    // The first beat goes out before the first receive.
    expect(row!.queues).toEqual([{ queue: 'cpu', slots: 1, busy: 0, lastReceiveAt: null }]);
    for (let i = 1; i <= 10; i++) {
      await clock.advance(INTERVAL);
      expect(registry.calls.beat).toBe(1 + i);
    }
    const receivedAt = Date.parse((await registry.list())[0]!.queues[0]!.lastReceiveAt ?? '');
    expect(clock.now() - receivedAt).toBeLessThanOrEqual(INTERVAL);
    await worker.stop();
    await run;
    expect(registry.size).toBe(0);
    expect(registry.calls).toMatchObject({ beat: 11, remove: 1 });
  });

  it('lists the running task with its envelope id and marks a stopping worker at once', async () => {
    const clock = new VirtualClock();
    const registry = new MemoryWorkerRegistry({ clock });
    const queue = new MemoryTaskQueue({ clock, name: 'cpu' });
    await queue.send(task('wf-1/train/2', { cmd: 'true' }));
    const worker = new Worker({
      queue,
      processors: [busy(clock, 10 * INTERVAL)],
      clock,
      log: quiet,
      numWorkers: 2,
      gracePeriodInMs: 10 * INTERVAL,
      heartbeat: { registry, intervalInMs: INTERVAL },
    });
    const run = worker.run();
    await clock.advance(INTERVAL);
    const [row] = await registry.list();
    expect(row!.running).toEqual([{ id: 'wf-1/train/2', since: expect.any(String) }]);
    expect(row!.queues[0]).toMatchObject({ slots: 2, busy: 1 });
    const stopped = worker.stop();
    await clock.advance(0);
    expect(workerState((await registry.list())[0]!)).toBe('stopping');
    expect(registry.calls.beat).toBe(3);
    await clock.advance(10 * INTERVAL);
    await stopped;
    await run;
    expect(registry.size).toBe(0);
  });

  it('a worker that stops beating (killed) reads lost after 3 intervals; a beating one stays ok', async () => {
    const workerClock = new VirtualClock();
    const serviceClock = new VirtualClock();
    const registry = new MemoryWorkerRegistry({ clock: serviceClock });
    const queue = new MemoryTaskQueue({ clock: workerClock });
    const worker = new Worker({
      queue,
      processors: [busy(workerClock, 1)],
      clock: workerClock,
      log: quiet,
      heartbeat: { registry, intervalInMs: INTERVAL },
    });
    const run = worker.run();
    for (let i = 0; i < 5; i++) {
      await serviceClock.advance(INTERVAL);
      await workerClock.advance(INTERVAL);
      expect(workerState((await registry.list())[0]!)).toBe('ok');
    }
    // The worker's time stands still from here: no more beats, as after kill -9.
    await serviceClock.advance(3 * INTERVAL);
    expect(workerState((await registry.list())[0]!)).toBe('ok');
    await serviceClock.advance(1);
    expect(workerState((await registry.list())[0]!)).toBe('lost');
    await worker.stop({ gracePeriodInMs: 0 });
    await workerClock.advance(0);
    await run;
  });

  it('heartbeat errors never stop the worker: tasks still run and the error is logged once', async () => {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ clock });
    await queue.send(task('t-1', { cmd: 'true' }));
    const lines: string[] = [];
    const registry = new MemoryWorkerRegistry({ clock });
    registry.beat = () => Promise.reject(new JobqError('unavailable', 'write the heartbeat failed: 503'));
    registry.remove = () => Promise.reject(new JobqError('unavailable', 'delete failed: 503'));
    const worker = new Worker({
      queue,
      processors: [busy(clock, 5 * INTERVAL)],
      clock,
      log: (l) => lines.push(l),
      idleTimeoutInMs: 1_000,
      heartbeat: { registry, intervalInMs: INTERVAL },
    });
    let summary: unknown;
    void worker.run().then((s) => (summary = s));
    await clock.runUntil(() => summary !== undefined);
    expect(summary).toMatchObject({ processed: 1, succeeded: 1 });
    expect(lines.filter((l) => l.startsWith('heartbeat failed'))).toHaveLength(1);
  });

  it('interval 0 turns heartbeats off', async () => {
    const clock = new VirtualClock();
    const registry = new MemoryWorkerRegistry({ clock });
    const worker = new Worker({
      queue: new MemoryTaskQueue({ clock }),
      processors: [],
      clock,
      log: quiet,
      idleTimeoutInMs: 1_000,
      heartbeat: { registry, intervalInMs: 0 },
    });
    const run = worker.run();
    await clock.runUntilIdle();
    await run;
    expect(registry.calls).toMatchObject({ beat: 0, remove: 0 });
    expect(worker.workerId).toBeNull();
  });
});
