import { describe, expect, it } from '@jest/globals';
import { VirtualClock } from '@jobq/ports';
import { describeOwnershipStoreContract } from '@jobq/ports/testing';
import { MemoryOwnershipDeployment, MemoryOwnershipStore } from './ownership-store';

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
});
