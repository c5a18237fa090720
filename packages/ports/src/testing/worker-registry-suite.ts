import { afterEach, describe, expect, it } from './jest-globals';
import { randomUUID } from 'node:crypto';
import { MAX_HEARTBEAT_RUNNING, workerState, type WorkerHeartbeat, type WorkerRegistry } from '../worker-registry';

/** A fresh, empty registry for one test, and how to dispose of it. */
export interface WorkerRegistryFixture {
  registry: WorkerRegistry;
  /** Moves the service's clock forward (tests of ages and pruning run only when offered). */
  advance?: (ms: number) => Promise<void>;
  dispose(): Promise<void>;
}

/** Options of {@link describeWorkerRegistryContract}. */
export interface WorkerRegistryContractOptions {
  timeoutInMs?: number;
}

function heartbeat(overrides: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
  return {
    workerId: `host-1-${randomUUID().slice(0, 8)}`,
    host: 'host',
    pid: 1,
    version: '1.2.3',
    intervalInMs: 30_000,
    stopping: false,
    startedAt: '2026-01-01T00:00:00.000Z',
    queues: [{ queue: 'cpu', slots: 4, busy: 1, lastReceiveAt: '2026-01-01T00:00:05.000Z' }],
    running: [{ id: 'wf-1/a/1', since: '2026-01-01T00:00:04.000Z' }],
    runningMore: 0,
    ...overrides,
  };
}

/** The contract of {@link WorkerRegistry} (docs/design.md#worker-heartbeats), as jest tests. */
export function describeWorkerRegistryContract(
  label: string,
  open: () => Promise<WorkerRegistryFixture>,
  options: WorkerRegistryContractOptions = {},
): void {
  describe(`WorkerRegistry contract: ${label}`, () => {
    let fixture: WorkerRegistryFixture | undefined;
    const fresh = async (): Promise<WorkerRegistryFixture> => {
      fixture = await open();
      return fixture;
    };
    afterEach(async () => {
      await fixture?.dispose();
      fixture = undefined;
    });
    const timeout = options.timeoutInMs ?? 30_000;

    it(
      'lists what a beat wrote, and a later beat replaces it',
      async () => {
        const { registry } = await fresh();
        expect(await registry.list()).toEqual([]);
        const first = heartbeat();
        await registry.beat(first);
        const [record, ...rest] = await registry.list();
        expect(rest).toEqual([]);
        const { seenAt, ageInMs, ...written } = record!;
        expect(written).toEqual(first);
        expect(Number.isFinite(Date.parse(seenAt))).toBe(true);
        expect(ageInMs).toBeGreaterThanOrEqual(0);
        expect(workerState(record!)).toBe('ok');
        const second = { ...first, stopping: true, queues: [{ queue: 'cpu', slots: 4, busy: 0, lastReceiveAt: null }], running: [] };
        await registry.beat(second);
        const again = await registry.list();
        expect(again.map(({ seenAt: _s, ageInMs: _a, ...w }) => w)).toEqual([second]);
        expect(workerState(again[0]!)).toBe('stopping');
      },
      timeout,
    );

    it(
      'keeps one row per worker, ordered by worker id, and remove deletes only its own (twice is fine)',
      async () => {
        const { registry } = await fresh();
        const a = heartbeat({ workerId: 'a-1-x' });
        const b = heartbeat({ workerId: 'b-2-y', queues: [{ queue: 'sb://ns/gpu', slots: 1, busy: 0, lastReceiveAt: null }], running: [] });
        await registry.beat(b);
        await registry.beat(a);
        expect((await registry.list()).map((r) => r.workerId)).toEqual(['a-1-x', 'b-2-y']);
        await registry.remove('a-1-x');
        await registry.remove('a-1-x');
        await registry.remove('never-there');
        const left = await registry.list();
        expect(left.map((r) => r.workerId)).toEqual(['b-2-y']);
        expect(left[0]!.queues).toEqual(b.queues);
      },
      timeout,
    );

    it(
      'cuts a long running list to the cap and counts the rest',
      async () => {
        const { registry } = await fresh();
        const running = Array.from({ length: MAX_HEARTBEAT_RUNNING + 5 }, (_, i) => ({
          id: `wf-${'x'.repeat(60)}/task-${i}/1`,
          since: '2026-01-01T00:00:00.000Z',
        }));
        await registry.beat(heartbeat({ workerId: 'busy-1-z', running }));
        const [record] = await registry.list();
        expect(record!.running).toEqual(running.slice(0, MAX_HEARTBEAT_RUNNING));
        expect(record!.runningMore).toBe(5);
      },
      timeout,
    );

    it(
      'prune keeps fresh rows and deletes old ones; ages grow on the service clock',
      async () => {
        const f = await fresh();
        const { registry } = f;
        await registry.beat(heartbeat({ workerId: 'old-1-a' }));
        expect(await registry.prune(24 * 3600_000)).toBe(0);
        if (f.advance === undefined) {
          // Without a movable clock: pruning at age 0 deletes every row.
          expect(await registry.prune(0)).toBe(1);
          expect(await registry.list()).toEqual([]);
          return;
        }
        await f.advance(100_000);
        await registry.beat(heartbeat({ workerId: 'new-1-b' }));
        const ages = Object.fromEntries((await registry.list()).map((r) => [r.workerId, r.ageInMs]));
        expect(ages['old-1-a']).toBe(100_000);
        expect(ages['new-1-b']).toBe(0);
        expect(workerState({ ageInMs: 100_000, intervalInMs: 30_000, stopping: false })).toBe('lost');
        expect(await registry.prune(50_000)).toBe(1);
        expect((await registry.list()).map((r) => r.workerId)).toEqual(['new-1-b']);
      },
      timeout,
    );
  });
}
