import { describe, expect, it } from '@jest/globals';
import type { WorkerRecord } from '@jobq/ports';
import { formatElapsed } from '@jobq/ports';
import { placementOf } from './placement';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(T0 + ms).toISOString();
const key = (spec: string): string => spec.replace(/^devstoreaccount1\//, '');

function worker(overrides: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    workerId: 'box-7-abc',
    host: 'box',
    pid: 7,
    version: '1',
    intervalInMs: 30_000,
    stopping: false,
    startedAt: iso(0),
    queues: [{ queue: 'devstoreaccount1/cpu', slots: 2, busy: 1, lastReceiveAt: iso(0) }],
    running: [{ id: 'wf/train/1', since: iso(0) }],
    runningMore: 0,
    seenAt: iso(180_000),
    ageInMs: 5_000,
    ...overrides,
  };
}

const running = { taskName: 'train', status: 'running', attemptNo: 1, queue: 'cpu', dispatchedAt: iso(-1_000) };

describe('placement', () => {
  it('a running task in a fresh heartbeat runs on that worker, for as long as the worker says', () => {
    expect(placementOf('wf', running, [worker()], T0 + 200_000, key)).toEqual({
      state: 'on_worker',
      worker_id: 'box-7-abc',
      host: 'box',
      since: iso(0),
      queue: 'cpu',
      text: 'running on box-7-abc (box) for 3m',
    });
  });

  it('a task no heartbeat lists waits in its queue once an interval + 10 s passed since its dispatch; not before', () => {
    const other = worker({ running: [] });
    expect(placementOf('wf', running, [other], T0 + 38_000, key)).toBeNull();
    expect(placementOf('wf', running, [other], T0 + 40_000, key)).toMatchObject({
      state: 'waiting',
      text: 'dispatched 41s ago, waiting in queue cpu',
    });
    // No heartbeats at all: the default interval (30 s) applies.
    expect(placementOf('wf', running, [], T0 + 40_000, key)?.text).toBe('dispatched 41s ago, waiting in queue cpu');
  });

  it('a lost worker does not count; a worker whose list was cut leaves it unknown; only running tasks are placed', () => {
    expect(placementOf('wf', running, [worker({ ageInMs: 90_001 })], T0 + 60_000, key)?.state).toBe('waiting');
    expect(placementOf('wf', running, [worker({ running: [], runningMore: 3 })], T0 + 60_000, key)).toBeNull();
    expect(placementOf('wf', { ...running, status: 'ready' }, [worker()], T0 + 60_000, key)).toBeNull();
    expect(placementOf('wf', { ...running, attemptNo: 2 }, [worker()], T0 + 60_000, key)?.state).toBe('waiting');
  });

  it('rough ages', () => {
    expect([formatElapsed(40_400), formatElapsed(180_000), formatElapsed(7_500_000)]).toEqual(['40s', '3m', '2h05m']);
  });
});
