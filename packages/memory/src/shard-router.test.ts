import { describe, expect, it } from '@jest/globals';
import { shardOf } from '@jobq/dag-core';
import { JobqError, ShardRouter, VirtualClock, type TaskQueue } from '@jobq/ports';
import { MemoryOwnershipDeployment, MemoryOwnershipStore } from './ownership-store';
import { MemoryTaskQueue } from './task-queue';

// The workers' and the client's routing by shard (docs/sharding.md#routing), on the in-memory
// ownership store and a virtual clock.

/** Workflow ids with one in each shard of 4 (so also of 2). */
function idsByShard(n: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.filter(Boolean).length < n; i++) {
    const id = `wf-${i}`;
    const k = shardOf(id, n);
    if (ids[k] === undefined) ids[k] = id;
  }
  return ids;
}

function setUp() {
  const clock = new VirtualClock();
  const deployment = new MemoryOwnershipDeployment(clock);
  const store = new MemoryOwnershipStore({ deployment });
  const queues = new Map<number, TaskQueue>();
  const opened: number[] = [];
  const queueOf = (k: number): TaskQueue => {
    let queue = queues.get(k);
    if (queue === undefined) {
      opened.push(k);
      queue = new MemoryTaskQueue({ name: k === 0 ? 'p-workflow-completions' : `p-workflow-completions-${k}`, clock });
      queues.set(k, queue);
    }
    return queue;
  };
  const logs: string[] = [];
  return { clock, deployment, store, queueOf, opened, logs };
}

const ids = idsByShard(4);

describe('ShardRouter', () => {
  it('routes everything to shard 0’s queue while the deployment has no manifest, reading it at most every 60 s', async () => {
    const s = setUp();
    const router = new ShardRouter({ manifest: s.store, queueOf: s.queueOf, clock: s.clock, log: (l) => s.logs.push(l) });
    for (const id of ids) expect((await router.queueFor(id)).name).toBe('p-workflow-completions');
    expect(s.store.calls.readManifest).toBe(1);
    await s.clock.advance(59_999);
    await router.queueFor(ids[1]!);
    expect(s.store.calls.readManifest).toBe(1);
    await s.clock.advance(1);
    await router.queueFor(ids[1]!);
    expect(s.store.calls.readManifest).toBe(2);
    expect(s.opened).toEqual([0]);
    expect(router.shardCount).toBe(1);
    expect(s.logs).toEqual([]);
  });

  it('routes by shardOf(id, n) of the manifest, and picks up a grown manifest at the next read, 60 s on', async () => {
    const s = setUp();
    await s.store.ensureManifest(2);
    const router = new ShardRouter({ manifest: s.store, queueOf: s.queueOf, clock: s.clock, log: (l) => s.logs.push(l) });
    await router.refresh();
    expect(router.shardCount).toBe(2);
    for (const id of ids) expect((await router.queueFor(id)).name).toBe(s.queueOf(shardOf(id, 2)).name);

    await s.store.growManifest(4, (await s.store.readManifest())!.etag);
    await s.clock.advance(30_000);
    // Not read again yet: still by 2.
    expect((await router.queueFor(ids[3]!)).name).toBe('p-workflow-completions-1');
    await s.clock.advance(30_000);
    expect((await router.queueFor(ids[3]!)).name).toBe('p-workflow-completions-3');
    expect(router.shardCount).toBe(4);
    for (const id of ids) expect((await router.queueFor(id)).name).toBe(s.queueOf(shardOf(id, 4)).name);
    // The first read is not logged; a change is.
    expect(s.logs).toEqual(['routing completions by 4 shard(s) (was 2)']);
    // The router's reads: at start and at 60 s (the sends in between read nothing); plus the test's own read for the ETag.
    expect(s.store.calls.readManifest).toBe(3);
  });

  it('keeps the last manifest when a read fails, logs it once until a read succeeds, and tries again every 60 s', async () => {
    const s = setUp();
    await s.store.ensureManifest(4);
    let fail = false;
    let reads = 0;
    const manifest = {
      readManifestIfChanged: (etag: string | null) => {
        reads++;
        return fail
          ? Promise.reject(new JobqError('unavailable', 'read the shard manifest failed: no answer'))
          : s.store.readManifestIfChanged(etag);
      },
    };
    const router = new ShardRouter({ manifest, queueOf: s.queueOf, clock: s.clock, log: (l) => s.logs.push(l) });
    expect((await router.queueFor(ids[2]!)).name).toBe('p-workflow-completions-2');
    fail = true;
    for (let minute = 1; minute <= 3; minute++) {
      await s.clock.advance(60_000);
      // Still routed by the 4 shards it read.
      expect((await router.queueFor(ids[2]!)).name).toBe('p-workflow-completions-2');
      expect((await router.queueFor(ids[3]!)).name).toBe('p-workflow-completions-3');
    }
    expect(reads).toBe(4);
    expect(s.logs.filter((l) => l.startsWith('reading the shard manifest failed'))).toEqual([
      'reading the shard manifest failed (read the shard manifest failed: no answer); routing by 4 shard(s) until a read succeeds (tried every 60000 ms)',
    ]);
    fail = false;
    await s.clock.advance(60_000);
    await router.queueFor(ids[1]!);
    expect(s.logs.at(-1)).toBe('the shard manifest can be read again');
    expect(router.shardCount).toBe(4);
  });

  it('before any manifest was read, a failed read routes to shard 0; concurrent sends share one read', async () => {
    const s = setUp();
    await s.store.ensureManifest(4);
    let reads = 0;
    const manifest = {
      readManifestIfChanged: () => {
        reads++;
        return Promise.reject(new JobqError('auth', 'read the shard manifest failed: access denied'));
      },
    };
    const router = new ShardRouter({ manifest, queueOf: s.queueOf, clock: s.clock, log: (l) => s.logs.push(l) });
    const queues = await Promise.all(ids.map((id) => router.queueFor(id)));
    expect(queues.map((q) => q.name)).toEqual(ids.map(() => 'p-workflow-completions'));
    expect(reads).toBe(1);
    expect(s.logs).toHaveLength(1);
  });

  it('sends to shard 0’s queue (which forwards) when a shard’s queue cannot be opened, logging it once', async () => {
    const s = setUp();
    await s.store.ensureManifest(4);
    const router = new ShardRouter({
      manifest: s.store,
      queueOf: (k) => (k === 3 ? Promise.reject(new JobqError('unavailable', 'the queue service could not be reached')) : s.queueOf(k)),
      clock: s.clock,
      log: (l) => s.logs.push(l),
    });
    expect((await router.queueFor(ids[3]!)).name).toBe('p-workflow-completions');
    expect((await router.queueFor(ids[3]!)).name).toBe('p-workflow-completions');
    expect((await router.queueFor(ids[1]!)).name).toBe('p-workflow-completions-1');
    expect(s.logs.filter((l) => l.startsWith('shard 3'))).toEqual([
      "shard 3's completion queue could not be opened (the queue service could not be reached); sending to shard 0's, which forwards",
    ]);
  });
});
