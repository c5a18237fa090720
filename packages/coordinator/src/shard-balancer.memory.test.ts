import { describe, expect, it } from '@jest/globals';
import { VirtualClock } from '@jobq/ports';
import { MemoryOwnershipDeployment, MemoryOwnershipStore } from '@jobq/memory';
import { ShardBalancer } from './shard-balancer';
import { FakeRunner, runnerLog } from './test-helpers/fake-runner';

// The balancer on the in-memory OwnershipStore adapter (not the test helper): a stalled runner's
// claim stops renewing, its lease runs out by the deployment's clock and tells the runner, and no
// other member gets the shard before that.
describe('ShardBalancer on MemoryOwnershipStore', () => {
  it("lets a stalled runner's lease run out (its runner told then) before anyone claims the shard", async () => {
    const clock = new VirtualClock();
    const deployment = new MemoryOwnershipDeployment(clock);
    await new MemoryOwnershipStore({ deployment }).ensureManifest(2);
    const log = runnerLog();
    const runners = new Map<string, FakeRunner[]>();
    const logs: string[] = [];
    const member = (id: string, seed: number) => {
      const balancer = new ShardBalancer({
        ownership: new MemoryOwnershipStore({ deployment, leaseDurationInMs: 60_000 }),
        memberId: id,
        runners: (shard) => {
          const runner = new FakeRunner(id, shard, clock, log);
          runners.set(id, [...(runners.get(id) ?? []), runner]);
          return runner;
        },
        options: { clock, random: () => seed, log: (line) => logs.push(`${id}: ${line}`) },
      });
      balancer.start();
      return balancer;
    };
    const [a, b] = [member('a', 0.25), member('b', 0.75)];
    await clock.runUntil(
      () => a.held().length === 1 && b.held().length === 1,
      () => logs.join('\n'),
      { withinMs: 60_000 },
    );
    const shard = b.held()[0]!;
    const runner = runners.get('b')!.find((r) => r.index === shard)!;
    const stalledAt = clock.now();
    runner.stall();
    // Until the lease has run out, shard `shard` keeps b's epoch, and only then is b's runner told.
    let claimedEarly = false;
    await clock.runUntil(
      () => {
        if (deployment.shard(shard).epoch !== 1 && !log.events.includes(`lost ${shard} b`)) claimedEarly = true;
        return log.events.includes(`lost ${shard} b`);
      },
      () => logs.join('\n'),
      { withinMs: 30_000 + 12_000 + 60_000 },
    );
    expect(claimedEarly).toBe(false);
    // Half a lease of silence (noticed at a round), then the lease's whole duration.
    expect(clock.now()).toBeGreaterThanOrEqual(stalledAt + 30_000 + 60_000);
    expect(logs.some((l) => l.startsWith(`b: shard ${shard}: its runner has not gone round`))).toBe(true);
    // The shard is worked again afterwards, by one member, with the next epoch.
    await clock.runUntil(
      () => deployment.shard(shard).epoch === 2 && deployment.heldLease(shard) !== null,
      () => logs.join('\n'),
      { withinMs: 6 * 12_000 },
    );
    expect(a.held().length + b.held().length).toBe(2);
    await Promise.all([a.stop(), b.stop()]);
    expect(deployment.heldLease(0)).toBeNull();
    expect(deployment.heldLease(1)).toBeNull();
  });
});
