import { describe, expect, it } from '@jest/globals';
import { isJobqError, JobqError, VirtualClock } from '@jobq/ports';
import { describeOwnershipStoreContract } from '@jobq/ports/testing';
import { MemoryOwnershipDeployment, MemoryOwnershipStore } from './ownership-store';
import { MemoryWorkflowStore } from './workflow-store';

describeOwnershipStoreContract('in memory', () => {
  const clock = new VirtualClock();
  const deployment = new MemoryOwnershipDeployment(clock);
  const leaseDurationInMs = 15_000;
  return Promise.resolve({
    store: new MemoryOwnershipStore({ deployment, leaseDurationInMs }),
    another: () => Promise.resolve(new MemoryOwnershipStore({ deployment, leaseDurationInMs })),
    writeManifestText: (text: string) => {
      deployment.manifest = { text, etag: deployment.tag() };
      return Promise.resolve();
    },
    advance: (ms: number) => clock.advance(ms),
    crash: (store) => (store as MemoryOwnershipStore).crash(),
    leaseDurationInMs,
    dispose: () => Promise.resolve(),
  });
});

describeOwnershipStoreContract('in memory, shard 0 the workflow store’s coordinator lease', () => {
  const clock = new VirtualClock();
  const deployment = new MemoryOwnershipDeployment(clock, { workflows: new MemoryWorkflowStore() });
  const leaseDurationInMs = 15_000;
  return Promise.resolve({
    store: new MemoryOwnershipStore({ deployment, leaseDurationInMs }),
    another: () => Promise.resolve(new MemoryOwnershipStore({ deployment, leaseDurationInMs })),
    writeManifestText: (text: string) => {
      deployment.manifest = { text, etag: deployment.tag() };
      return Promise.resolve();
    },
    advance: (ms: number) => clock.advance(ms),
    crash: (store) => (store as MemoryOwnershipStore).crash(),
    leaseDurationInMs,
    dispose: () => Promise.resolve(),
  });
});

describe('MemoryOwnershipDeployment over a MemoryWorkflowStore: shard 0’s lease is the coordinator lease', () => {
  const open = () => {
    const clock = new VirtualClock();
    const workflows = new MemoryWorkflowStore();
    const deployment = new MemoryOwnershipDeployment(clock, { shards: 2, workflows });
    return { clock, workflows, deployment, a: new MemoryOwnershipStore({ deployment, leaseDurationInMs: 20_000 }) };
  };

  it('a coordinator without shards holding it holds shard 0: shard 0 cannot be claimed, and the manifest cannot grow', async () => {
    const { workflows, deployment, a } = open();
    const old = await workflows.acquireLease();
    expect(await a.claim(0, 'a')).toBeNull();
    expect(await a.claim(1, 'a')).toMatchObject({ shard: 1, epoch: 1 });
    expect((await a.list()).shards.map((s) => s.leased)).toEqual([true, true]);
    await a.release(1);
    const error: unknown = await a.growManifest(4, deployment.manifest!.etag).catch((e: unknown) => e);
    expect(isJobqError(error, 'lease-held')).toBe(true);
    await old.release();
    expect(await a.claim(0, 'a')).toMatchObject({ shard: 0, epoch: 1 });
  });

  it('a claim of shard 0 fences a coordinator without shards, and is lost to one that breaks the lease', async () => {
    const { workflows, deployment, a } = open();
    const claim = (await a.claim(0, 'a'))!;
    expect(await workflows.leaseState()).toEqual({ held: true, state: 'leased' });
    const refused: unknown = await workflows.acquireLease().catch((e: unknown) => e);
    expect(isJobqError(refused, 'lease-held')).toBe(true);
    const old = await workflows.acquireLease({ breakExisting: true });
    expect(claim.lease.lost.aborted).toBe(true);
    expect(deployment.holderOf(0)).toBeNull();
    expect((await a.list()).shards[0]).toMatchObject({ leased: true, owner: 'a', epoch: 1 });
    // And shard 0's breakLease breaks the coordinator's.
    await a.breakLease(0);
    expect(old.lost.aborted).toBe(true);
    expect(await a.claim(0, 'b')).toMatchObject({ epoch: 2, owner: 'b' });
  });

  it('releasing, losing or running out shard 0’s claim frees the coordinator lease', async () => {
    const { clock, workflows, a } = open();
    await a.claim(0, 'a');
    await a.release(0);
    expect(await workflows.leaseState()).toEqual({ held: false, state: 'available' });
    await a.claim(0, 'a');
    a.loseLease(0);
    expect(await workflows.leaseState()).toEqual({ held: false, state: 'expired' });
    const claim = (await a.claim(0, 'a'))!;
    a.crash();
    await clock.advance(20_000);
    expect(claim.lease.lost.aborted).toBe(true);
    expect(await workflows.leaseState()).toEqual({ held: false, state: 'expired' });
    expect((await workflows.acquireLease()).lost.aborted).toBe(false);
  });
});

describe('MemoryOwnershipStore specifics', () => {
  it('loses a lease as a failed renewal does: lost fires and the shard is free for the next epoch', async () => {
    const deployment = new MemoryOwnershipDeployment(new VirtualClock());
    const a = new MemoryOwnershipStore({ deployment });
    const b = new MemoryOwnershipStore({ deployment });
    const claim = await a.claim(0, 'a');
    a.loseLease(0);
    expect(claim!.lease.lost.aborted).toBe(true);
    expect(await b.claim(0, 'b')).toMatchObject({ epoch: 2, owner: 'b' });
    expect(a.calls.claim).toBe(1);
  });

  it("runs out a crashed store's later claims too, and never a live store's", async () => {
    const clock = new VirtualClock();
    const deployment = new MemoryOwnershipDeployment(clock);
    const a = new MemoryOwnershipStore({ deployment, leaseDurationInMs: 20_000 });
    const b = new MemoryOwnershipStore({ deployment });
    await b.claim(1, 'b');
    a.crash();
    await a.claim(0, 'a');
    await clock.advance(20_000);
    expect((await b.list()).shards.map((s) => s.leased)).toEqual([false]);
    expect(deployment.heldLease(1)).not.toBeNull();
  });

  it('counts every store’s calls on the deployment, records each claim, and reports holders and epochs', async () => {
    const clock = new VirtualClock();
    const deployment = new MemoryOwnershipDeployment(clock, { shards: 2 });
    const a = new MemoryOwnershipStore({ deployment });
    const b = new MemoryOwnershipStore({ deployment });
    await a.heartbeat('a');
    await b.heartbeat('b');
    await a.claim(0, 'a');
    await clock.advance(5_000);
    expect(await b.claim(0, 'b')).toBeNull();
    await b.claim(1, 'b');
    await b.release(1);
    await b.leave('b');
    await a.list();
    const t0 = clock.now() - 5_000;
    expect(deployment.calls).toEqual({ readManifest: 0, list: 1, claim: 3, release: 1, heartbeat: 2, leave: 1 });
    expect(b.calls).toEqual({ readManifest: 0, list: 0, claim: 2, release: 1, heartbeat: 1, leave: 1 });
    expect(deployment.claims).toEqual([
      { shard: 0, owner: 'a', epoch: 1, at: t0 },
      { shard: 1, owner: 'b', epoch: 1, at: t0 + 5_000 },
    ]);
    expect([deployment.holderOf(0), deployment.holderOf(1)]).toEqual(['a', null]);
    expect(deployment.epochs()).toEqual([1, 1]);
    // Another coordinator grew the manifest behind the stores' backs (a's lease held).
    deployment.setManifest(4);
    expect((await b.list()).manifest.shards).toBe(4);
    expect(deployment.epochs()).toEqual([1, 1, 0, 0]);
  });

  it('injects claim and list faults: a claim that loses its race takes nothing; a list rejects with the error', async () => {
    const deployment = new MemoryOwnershipDeployment(new VirtualClock(), { shards: 2 });
    const a = new MemoryOwnershipStore({ deployment });
    deployment.faults.claim = (shard, owner) => shard === 1 && owner === 'a';
    expect(await a.claim(1, 'a')).toBeNull();
    expect(await a.claim(0, 'a')).toMatchObject({ shard: 0, epoch: 1 });
    expect(deployment.epochs()).toEqual([1, 0]);
    expect(deployment.claims).toHaveLength(1);
    deployment.faults.claim = undefined;
    expect(await a.claim(1, 'a')).toMatchObject({ shard: 1, epoch: 1 });
    deployment.faults.list = () => new JobqError('unavailable', 'the service is down');
    await expect(a.list()).rejects.toThrow('the service is down');
    deployment.faults.list = () => null;
    expect((await a.list()).shards.map((s) => s.leased)).toEqual([true, true]);
  });

  it('makes each call take its latency on the clock before it acts: the first to arrive wins', async () => {
    const clock = new VirtualClock();
    const delays = [300, 100];
    const deployment = new MemoryOwnershipDeployment(clock, { latencyInMs: () => delays.shift() ?? 0 });
    const a = new MemoryOwnershipStore({ deployment });
    const b = new MemoryOwnershipStore({ deployment });
    const t0 = clock.now();
    const slow = a.claim(0, 'a');
    const fast = b.claim(0, 'b');
    await clock.advance(100);
    expect(await fast).toMatchObject({ owner: 'b', epoch: 1 });
    expect(deployment.calls.claim).toBe(1);
    await clock.advance(200);
    expect(await slow).toBeNull();
    expect(deployment.claims.map((c) => [c.owner, c.at])).toEqual([['b', t0 + 100]]);
  });

  it('a store crashed unreachable fails its calls, those in flight too, and its leases run out (lost fired) a lease later', async () => {
    const clock = new VirtualClock();
    const deployment = new MemoryOwnershipDeployment(clock, { shards: 2, latencyInMs: () => 50 });
    const a = new MemoryOwnershipStore({ deployment, leaseDurationInMs: 20_000 });
    const b = new MemoryOwnershipStore({ deployment });
    const claimed = a.claim(0, 'a');
    await clock.advance(50);
    const claim = (await claimed)!;
    const inFlight = a.claim(1, 'a');
    a.crash({ unreachable: true });
    await clock.advance(50);
    const error: unknown = await inFlight.catch((e: unknown) => e);
    expect(isJobqError(error, 'unavailable')).toBe(true);
    const beat = a.heartbeat('a').catch((e: unknown) => e);
    await clock.advance(50);
    expect(String(await beat)).toMatch(/cannot be reached/);
    expect(deployment.epochs()).toEqual([1, 0]);
    await clock.advance(20_000 - 100 - 1); // the crash was 100 ms ago
    expect(claim.lease.lost.aborted).toBe(false);
    expect(deployment.holderOf(0)).toBe('a');
    await clock.advance(1);
    // Nobody read shard 0: the expiry alone fires lost.
    expect(claim.lease.lost.aborted).toBe(true);
    const taking = b.claim(0, 'b');
    await clock.advance(50);
    expect(await taking).toMatchObject({ owner: 'b', epoch: 2 });
  });
});
