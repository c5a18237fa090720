import { describe, expect, it } from '@jest/globals';
import { MemoryWorkerRegistry } from '@jobq/memory';
import { VirtualClock, type WorkerHeartbeat } from '@jobq/ports';
import { WORKER_PRUNE_INTERVAL_IN_MS, WORKER_ROW_MAX_AGE_IN_MS } from './coordinator';
import { useMemoryStacks } from './test-helpers/memory-stack';

const stacks = useMemoryStacks();

const row = (workerId: string): WorkerHeartbeat => ({
  workerId,
  host: 'h',
  pid: 1,
  version: 'x',
  intervalInMs: 30_000,
  stopping: false,
  startedAt: new Date(0).toISOString(),
  queues: [],
  running: [],
  runningMore: 0,
});

describe('Coordinator prunes heartbeat rows (in memory, virtual time)', () => {
  it('deletes rows silent for a day, at start and then at most once an hour', async () => {
    const clock = new VirtualClock();
    const registry = new MemoryWorkerRegistry({ clock });
    await registry.beat(row('dead-1-a'));
    await clock.advance(WORKER_ROW_MAX_AGE_IN_MS);
    await registry.beat(row('live-1-b'));
    const s = await stacks.open({
      clock,
      workerRegistry: registry,
      coordinator: { idleSleepInMs: 60_000, receiveWaitInMs: 60_000, cancelPollIntervalInMs: 600_000, statsIntervalInMs: 600_000 },
    });
    await s.worker.stop();
    await s.until(() => registry.calls.prune > 0);
    expect((await registry.list()).map((r) => r.workerId)).toEqual(['live-1-b']);
    expect(s.logs.some((l) => l.includes('pruned 1 worker heartbeat row'))).toBe(true);
    await clock.advance(WORKER_PRUNE_INTERVAL_IN_MS - 1_000);
    expect(registry.calls.prune).toBe(1);
    await clock.advance(2_000);
    expect(registry.calls.prune).toBe(2);
  });
});
