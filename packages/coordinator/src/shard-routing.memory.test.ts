import { describe, expect, it } from '@jest/globals';
import { shardOf } from '@jobq/dag-core';
import { MemoryOwnershipDeployment, MemoryOwnershipStore, MemoryTaskQueue } from '@jobq/memory';
import { ShardRouter, VirtualClock, type TaskQueue } from '@jobq/ports';
import type { Coordinator } from './coordinator';
import { WorkflowClient } from './workflow-client';
import { useMemoryStacks, type MemoryStack, type MemoryStackOptions } from './test-helpers/memory-stack';
import { WrappedQueue } from './test-helpers/wrappers';

// Routing by shard (docs/sharding.md#routing), in memory on a virtual clock: old workers and
// clients send everything to shard 0's queue and its runner forwards other shards' messages;
// routed ones send to the shard's queue at once.

const stacks = useMemoryStacks();

const chain = (a = 'true') => ({
  name: 'chain',
  tasks: [
    { name: 'a', kwargs: { cmd: a } },
    { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
  ],
});

/** `perShard` workflow ids in each shard of `n`, by shard, then in order (prefixed by `tag`). */
function idsByShard(n: number, perShard: number, tag: string): string[][] {
  const out: string[][] = Array.from({ length: n }, () => []);
  for (let i = 0; out.some((ids) => ids.length < perShard); i++) {
    const id = `${tag}-${i}`;
    const ids = out[shardOf(id, n)]!;
    if (ids.length < perShard) ids.push(id);
  }
  return out;
}

/**
 * A 4-shard deployment in memory: the stack's completion queue is shard 0's; shards 1–3 get their
 * own. `routed`: its workers and its `client` route by the manifest (a `ShardRouter`).
 */
async function fourShards(options: MemoryStackOptions & { routed?: boolean } = {}) {
  const clock = new VirtualClock();
  const ownership = new MemoryOwnershipStore({ deployment: new MemoryOwnershipDeployment(clock) });
  let queues: TaskQueue[] = [];
  const queueOf = (k: number): TaskQueue => queues[k]!;
  const router = new ShardRouter({ manifest: ownership, queueOf, clock });
  const s = await stacks.open({ start: false, clock, ...(options.routed ? { workerRoute: router } : {}), ...options });
  queues = [
    s.completions,
    ...[1, 2, 3].map((k) => new MemoryTaskQueue({ name: `mem-workflow-completions-${k}`, lockDurationInMs: 2_000, clock })),
  ];
  const client = options.routed
    ? new WorkflowClient({
        store: s.store,
        completions: s.completions,
        route: router,
        outputsContainer: s.outputs.outputsContainer,
        now: () => new Date(clock.now()),
      })
    : s.client;
  const runners: Coordinator[] = [];
  /** Claims the 4 shards and starts a runner on each. */
  const startRunners = async () => {
    for (let k = 0; k < 4; k++) {
      const claim = (await ownership.claim(k, 'm1'))!;
      const runner = s.newCoordinator({}, { shard: { index: k, count: 4, claim, queueOf }, completions: () => queueOf(k) });
      expect(await runner.start()).toBe(true);
      runners.push(runner);
    }
  };
  const submit = async (id: string, a = 'true') => {
    await client.submit({ text: JSON.stringify(chain(a)), filename: 'flow.json' }, { id });
  };
  return { s, ownership, queues, queueOf, runners, startRunners, router, client, submit };
}

async function allCompleted(s: MemoryStack, ids: readonly string[]): Promise<void> {
  for (const id of ids) expect((await s.waitFor(id, (r) => r.status !== 'running' && r.status !== 'pending')).status).toBe('completed');
}

/** Each task of each workflow ran once, and was applied once, by its own shard's runner. */
function appliedOnce(s: MemoryStack, runners: readonly Coordinator[], byShard: readonly (readonly string[])[]): void {
  for (const [key, runs] of s.runs) expect([key, runs]).toEqual([key, 1]);
  expect(runners.map((r) => r.counters.completionsApplied)).toEqual(byShard.map((ids) => 2 * ids.length));
  expect(runners.map((r) => r.counters.completionsIgnored)).toEqual([0, 0, 0, 0]);
}

describe('routing by shard', () => {
  it('an old worker and client (everything to shard 0’s queue) on 4 shards: shard 0’s runner forwards the other shards’ messages, each applied once', async () => {
    const { s, ownership, runners, startRunners, submit } = await fourShards();
    await ownership.ensureManifest(4);
    await startRunners();
    const byShard = idsByShard(4, 3, 'old');
    for (const ids of byShard) for (const id of ids) await submit(id);
    await allCompleted(s, byShard.flat());

    appliedOnce(s, runners, byShard);
    // Shards 1–3's messages all came through shard 0: a wake-up and two completions per workflow.
    expect(runners.map((r) => r.counters.forwarded)).toEqual([9 * 3, 0, 0, 0]);
    expect(runners.map((r) => r.counters.wakeups)).toEqual([3, 3, 3, 3]);
    await s.clock.advance(1_000);
    expect(await s.store.readCoordinatorStats({ shard: 0 })).toMatchObject({ forwarded: 27 });
    expect(await s.store.readCoordinatorStats({ shard: 1 })).toMatchObject({ forwarded: 0 });
  });

  it('reshard 1 → 4 with messages queued: the completions and wake-ups left in shard 0’s queue are forwarded to their shards and applied once', async () => {
    const { s, ownership, queues, runners, startRunners, submit } = await fourShards({ workers: 8 });
    // One shard: today's coordinator dispatches every workflow's first task, then stops.
    await s.coordinator.start();
    const running = idsByShard(4, 2, 'before');
    for (const ids of running) for (const id of ids) await submit(id, 'sleep 5');
    await s.until(
      () => s.runCount('a') === 8,
      () => `runs: ${JSON.stringify([...s.runs])}`,
    );
    await s.coordinator.stop();
    // The tasks end meanwhile: 8 completions wait; 8 more workflows are submitted: 8 wake-ups wait.
    const waiting = idsByShard(4, 2, 'during');
    for (const ids of waiting) for (const id of ids) await submit(id);
    await s.until(async () => (await queues[0]!.approximateMessageCount()) === 16);

    await ownership.growManifest(4, '');
    await startRunners();
    const byShard = running.map((ids, k) => [...ids, ...waiting[k]!]);
    await allCompleted(s, byShard.flat());

    for (const [key, runs] of s.runs) expect([key, runs]).toEqual([key, 1]);
    // The 1-shard coordinator applied nothing (no task had ended); each shard's runner applied its own.
    expect(s.coordinator.counters.completionsApplied).toBe(0);
    expect(runners.map((r) => r.counters.completionsApplied)).toEqual([8, 8, 8, 8]);
    expect(runners.map((r) => r.counters.completionsIgnored)).toEqual([0, 0, 0, 0]);
    // Shard 0's runner forwarded the queued messages of shards 1–3's 12 workflows (6 completions of
    // `a`, 6 wake-ups), and the 18 completions the (old) workers sent them after (6 of `b` for the
    // first 6, `a` and `b` for the other 6).
    expect(runners.map((r) => r.counters.forwarded)).toEqual([12 + 18, 0, 0, 0]);
  });

  it('a routed worker whose manifest read sees a grow routes later completions to the new shards', async () => {
    const { s, ownership, runners, startRunners, submit, router } = await fourShards({ routed: true });
    // One shard, no manifest: the router reads none and sends everything to shard 0's queue.
    await s.coordinator.start();
    const first = idsByShard(4, 1, 'one').flat();
    for (const id of first) await submit(id);
    await allCompleted(s, first);
    expect(router.shardCount).toBe(1);
    await s.coordinator.stop();

    await ownership.growManifest(4, '');
    await startRunners();
    // Until the router reads the manifest again (60 s after its last read), shard 0 forwards.
    const second = idsByShard(4, 1, 'two');
    for (const ids of second) for (const id of ids) await submit(id);
    await allCompleted(s, second.flat());
    const forwardedBefore = runners[0]!.counters.forwarded;
    // Shards 1–3's wake-ups and completions (3 each) came through shard 0.
    expect(forwardedBefore).toBe(9);
    await s.clock.advance(60_000);
    const third = idsByShard(4, 2, 'three');
    for (const ids of third) for (const id of ids) await submit(id);
    await allCompleted(s, third.flat());
    expect(router.shardCount).toBe(4);
    expect(runners[0]!.counters.forwarded).toBe(forwardedBefore);
    expect(runners.map((r) => r.counters.completionsApplied)).toEqual(second.map((ids, k) => 2 * (ids.length + third[k]!.length)));
    for (const [key, runs] of s.runs) expect([key, runs]).toEqual([key, 1]);
  });

  it('a forward whose send fails leaves the message; it is forwarded at its next delivery', async () => {
    const { s, ownership, queues, runners, submit } = await fourShards();
    await ownership.ensureManifest(4);
    let failures = 2;
    const flakyQueueOf = (k: number): Promise<TaskQueue> =>
      k === 2 && failures-- > 0 ? Promise.reject(new Error('queue 2 unreachable')) : Promise.resolve(queues[k]!);
    for (let k = 0; k < 4; k++) {
      const claim = (await ownership.claim(k, 'm1'))!;
      const runner = s.newCoordinator({}, { shard: { index: k, count: 4, claim, queueOf: flakyQueueOf }, completions: () => queues[k]! });
      await runner.start();
      runners.push(runner);
    }
    const [id] = idsByShard(4, 1, 'flaky')[2]!;
    await submit(id!);
    await allCompleted(s, [id!]);
    expect(runners[0]!.counters.leftForRedelivery).toBe(2);
    expect(runners[0]!.counters.forwarded).toBe(3);
    expect(runners[2]!.counters.completionsApplied).toBe(2);
    expect(s.logs.filter((l) => l.includes('to shard 2 failed (queue 2 unreachable); left for redelivery'))).toHaveLength(2);
  });

  it('shard 2’s completion queue failing to receive for 30 s: the other shards finish meanwhile; shard 2’s runner logs, keeps its lease and catches up', async () => {
    const { s, ownership, queues, runners, submit } = await fourShards({ routed: true });
    await ownership.ensureManifest(4);
    const outageEnd = s.clock.now() + 30_000;
    const outage = new WrappedQueue(queues[2]!, {
      receive: (_options, receive) => (s.clock.now() < outageEnd ? Promise.reject(new Error('queue 2 unreachable')) : receive()),
    });
    for (let k = 0; k < 4; k++) {
      const claim = (await ownership.claim(k, 'm1'))!;
      const own = k === 2 ? outage : queues[k]!;
      const runner = s.newCoordinator({}, { shard: { index: k, count: 4, claim, queueOf: (j) => queues[j]! }, completions: () => own });
      expect(await runner.start()).toBe(true);
      runners.push(runner);
    }
    const byShard = idsByShard(4, 2, 'outage');
    for (const ids of byShard) for (const id of ids) await submit(id);
    const others = [0, 1, 3].flatMap((k) => byShard[k]!);
    await allCompleted(s, others);
    // The other shards finished within the outage; shard 2's workflows wait for their queue.
    expect(s.clock.now()).toBeLessThan(outageEnd);
    for (const id of byShard[2]!) expect((await s.store.load(id))?.runtime.status).not.toBe('completed');
    expect(runners[2]!.counters.receiveErrors).toBeGreaterThan(0);
    expect(s.logs.some((l) => l.includes('receive failed: queue 2 unreachable'))).toBe(true);

    await allCompleted(s, byShard[2]!);
    expect(s.clock.now()).toBeGreaterThanOrEqual(outageEnd);
    appliedOnce(s, runners, byShard);
    // It kept its lease all along: still held, still the one claim.
    const view = await ownership.list();
    expect(view.shards[2]).toMatchObject({ leased: true, owner: 'm1', epoch: 1 });
  });

  it('a routed worker and client send each message to its shard’s queue: nothing is forwarded; a cancel goes there too', async () => {
    const { s, ownership, queues, runners, startRunners, client, submit } = await fourShards({ routed: true });
    await ownership.ensureManifest(4);
    await startRunners();
    const byShard = idsByShard(4, 2, 'new');
    for (const ids of byShard) for (const id of ids) await submit(id);
    await allCompleted(s, byShard.flat());
    appliedOnce(s, runners, byShard);
    expect(runners.map((r) => r.counters.forwarded)).toEqual([0, 0, 0, 0]);
    expect(runners.map((r) => r.counters.wakeups)).toEqual([2, 2, 2, 2]);

    // With the runners stopped, a submit's and a cancel's wake-ups wait in the workflow's shard's queue.
    for (const runner of runners) await runner.stop();
    const [id] = idsByShard(4, 1, 'late')[3]!;
    await submit(id!);
    await client.cancel(id!);
    expect(await queues[3]!.approximateMessageCount()).toBe(2);
    for (const k of [0, 1, 2]) expect(await queues[k]!.approximateMessageCount()).toBe(0);
  });
});
