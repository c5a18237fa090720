import { describe, expect, it } from '@jest/globals';
import { MemoryOwnershipDeployment, MemoryOwnershipStore, type MemoryWorkflowStore } from '@jobq/memory';
import { isJobqError, type WorkflowStore } from '@jobq/ports';
import { coordinatorRunners, ShardBalancer } from './shard-balancer';
import { useMemoryStacks } from './test-helpers/memory-stack';
import { observeCalls } from './test-helpers/wrappers';

// A Coordinator bound to one shard (a shard runner, docs/sharding.md): its lease comes from the
// claim, its stats are the shard's document, its scans ask for the shard's workflows only; without
// the shard option nothing of this applies.

const stacks = useMemoryStacks();

/** Records the filters of the listings and the lease calls made through the store. */
function recording(calls: { method: string; filter: unknown }[]) {
  const recorded = new Set(['listWorkflows', 'listRequests', 'listReruns', 'acquireLease']);
  return (store: MemoryWorkflowStore): WorkflowStore =>
    observeCalls(store, (method, args) => {
      if (recorded.has(method)) calls.push({ method, filter: args[0] });
    });
}

const flow = {
  name: 'two',
  tasks: [
    { name: 'a', kwargs: { cmd: 'true' } },
    { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
  ],
};

describe('Coordinator with a shard (a shard runner)', () => {
  it('takes its lease from the claim, scans only its shard, writes the shard’s stats and releases the claim on stop', async () => {
    const s = await stacks.open({ start: false });
    const deployment = new MemoryOwnershipDeployment(s.clock);
    const ownership = () => new MemoryOwnershipStore({ deployment });
    await ownership().ensureManifest(4);
    const claim = (await ownership().claim(2, 'm1'))!;
    const calls: { method: string; filter: unknown }[] = [];
    const runner = s.newCoordinator({}, { shard: { index: 2, count: 4, claim }, store: recording(calls) });
    expect(await runner.start()).toBe(true);
    expect(runner.health()).toMatchObject({ phase: 'running', holds: 'lease' });
    const id = await s.submit(flow);
    const done = await s.waitFor(id, (r) => r.status === 'completed');
    expect(done.tasks.b?.status).toBe('completed');
    // Past a re-run scan and a timeout sweep.
    await s.clock.advance(31_000);

    expect(calls.filter((c) => c.method === 'acquireLease')).toEqual([]);
    const scans = calls.filter((c) => c.method !== 'listReruns' || (c.filter as { workflowId?: string }).workflowId === undefined);
    expect(new Set(scans.map((c) => c.method))).toEqual(new Set(['listWorkflows', 'listRequests', 'listReruns']));
    for (const c of scans) expect(c.filter).toMatchObject({ shard: { index: 2, count: 4 } });

    expect(await s.store.readCoordinatorStats({ shard: 2 })).toMatchObject({
      shard: 2,
      shards: 4,
      epoch: 1,
      owner: 'm1',
      leaseId: claim.lease.leaseId,
    });
    expect(await s.store.readCoordinatorStats()).toBeNull();

    expect(deployment.heldLease(2)).toBe(claim.lease);
    await runner.stop();
    expect(deployment.heldLease(2)).toBeNull();
    expect(runner.health()).toMatchObject({ phase: 'stopped', holds: 'nothing' });
    // The shard can be claimed again at once.
    expect(await ownership().claim(2, 'm2')).toMatchObject({ shard: 2, epoch: 2, owner: 'm2' });
  });

  it('halts when the claim’s lease is lost, and run() rejects with lease-lost', async () => {
    const s = await stacks.open({ start: false });
    const deployment = new MemoryOwnershipDeployment(s.clock);
    await new MemoryOwnershipStore({ deployment }).ensureManifest(2);
    const claim = (await new MemoryOwnershipStore({ deployment }).claim(1, 'm1'))!;
    const runner = s.newCoordinator({}, { shard: { index: 1, count: 2, claim } });
    const running = runner.run().catch((e: unknown) => e);
    await s.clock.advance(1_000);
    await new MemoryOwnershipStore({ deployment }).breakLease(1);
    let error: unknown;
    await s.until(async () => {
      error = await Promise.race([running, Promise.resolve('pending')]);
      return error !== 'pending';
    });
    expect(isJobqError(error, 'lease-lost')).toBe(true);
    expect(runner.health().holds).toBe('nothing');
  });

  it('without a shard: the coordinator lease, the prefix’s stats document and unfiltered scans, as before', async () => {
    const calls: { method: string; filter: unknown }[] = [];
    const s = await stacks.open({ coordinatorStore: recording(calls) });
    await s.run(flow);
    await s.clock.advance(31_000);
    expect(calls.filter((c) => c.method === 'acquireLease')).toHaveLength(1);
    for (const c of calls) expect(c.filter === undefined || !Object.hasOwn(c.filter as object, 'shard')).toBe(true);
    expect(await s.store.readCoordinatorStats()).not.toHaveProperty('shard');
    expect(await s.store.readCoordinatorStats()).toHaveProperty('completionsApplied');
  });

  it('over the workflow store, shard 0’s runner and a coordinator without shards fence each other (one lease, as `_coordinator.lock`)', async () => {
    const s = await stacks.open({ start: false });
    const deployment = new MemoryOwnershipDeployment(s.clock, { shards: 4, workflows: s.store });
    const claim = (await new MemoryOwnershipStore({ deployment }).claim(0, 'm1'))!;
    const runner = s.newCoordinator({}, { shard: { index: 0, count: 4, claim } });
    const running = runner.run().catch((e: unknown) => e);
    await s.clock.advance(1_000);
    // An old coordinator (it knows nothing of shards) is fenced by shard 0's owner…
    const refused: unknown = await s
      .newCoordinator()
      .start()
      .catch((e: unknown) => e);
    expect(isJobqError(refused, 'lease-held')).toBe(true);
    // …and one that breaks the lease halts the runner, and holds shard 0 until it stops.
    const old = s.newCoordinator({ breakLease: true });
    expect(await old.start()).toBe(true);
    let error: unknown;
    await s.until(async () => {
      error = await Promise.race([running, Promise.resolve('pending')]);
      return error !== 'pending';
    });
    expect(isJobqError(error, 'lease-lost')).toBe(true);
    expect(await new MemoryOwnershipStore({ deployment }).claim(0, 'm2')).toBeNull();
    expect((await new MemoryOwnershipStore({ deployment }).list()).shards[0]).toMatchObject({ leased: true, owner: 'm1', epoch: 1 });
    const done = await s.run(flow);
    expect(done.status).toBe('completed');
    await old.stop();
    expect(await new MemoryOwnershipStore({ deployment }).claim(0, 'm2')).toMatchObject({ epoch: 2, owner: 'm2' });
  });

  it('a one-shard deployment through the balancer (memory OwnershipStore): shard 0 runs as today, and a second member takes over on SIGTERM', async () => {
    const calls: { method: string; filter: unknown }[] = [];
    const s = await stacks.open({ start: false });
    const deployment = new MemoryOwnershipDeployment(s.clock);
    const store = recording(calls)(s.store);
    const member = (id: string) => {
      const balancer = new ShardBalancer({
        ownership: new MemoryOwnershipStore({ deployment }),
        memberId: id,
        runners: coordinatorRunners({
          store,
          completions: (shard) => {
            if (shard !== 0) throw new Error(`no queue for shard ${shard}`);
            return s.completions;
          },
          queues: () => s.taskQueue,
          outputs: s.outputs,
          options: {
            clock: s.clock,
            receiveWaitInMs: 100,
            cancelPollIntervalInMs: 200,
            statsIntervalInMs: 500,
            log: (line) => s.logs.push(`${id}: ${line}`),
          },
        }),
        options: { clock: s.clock, random: () => 0.5, log: (line) => s.logs.push(`${id}: ${line}`) },
      });
      balancer.start();
      return balancer;
    };
    const a = member('a');
    await s.clock.advance(0);
    expect(a.held()).toEqual([0]);
    const first = await s.run(flow);
    expect(first.status).toBe('completed');
    expect(calls.filter((c) => c.method === 'acquireLease')).toEqual([]);
    // Shard 0 of 1: the prefix's own stats document.
    expect(await s.store.readCoordinatorStats()).toMatchObject({ shard: 0, shards: 1, epoch: 1, owner: 'a' });
    expect(s.logs).toContain('a: shard 0: claimed (epoch 1)');

    const b = member('b');
    await s.clock.advance(30_000);
    expect(b.held()).toEqual([]);
    expect(b.health().phase).toBe('standby');
    await a.stop();
    await s.until(
      () => b.held().length === 1,
      () => 'b never took shard 0',
      12_000,
    );
    const second = await s.run(flow);
    expect(second.status).toBe('completed');
    expect(await s.store.readCoordinatorStats()).toMatchObject({ shard: 0, epoch: 2, owner: 'b' });
    await b.stop();
    expect(deployment.heldLease(0)).toBeNull();
  });
});
