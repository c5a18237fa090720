import { describe, expect, it } from '@jest/globals';
import { MemoryOwnershipDeployment, MemoryOwnershipStore } from '@jobq/memory';
import { isJobqError, JobqError, VirtualClock, type ShardCount } from '@jobq/ports';
import { ShardBalancer, type ShardBalancerOptions } from './shard-balancer';
import { crashableClock } from './test-helpers/crashable-clock';
import { FakeRunner, runnerLog } from './test-helpers/fake-runner';

// The ShardBalancer loop against the in-memory OwnershipStore (one store per member, one shared
// deployment), with runners that do no work, all on a virtual clock: rounds every 10 s ±20 %,
// claims, hand-overs, a manifest change, stop, a stalled runner.

/** A seeded uniform source in [0, 1) (mulberry32). */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function world(shards: ShardCount) {
  const clock = new VirtualClock();
  const ownership = new MemoryOwnershipDeployment(clock, { shards });
  const stores = new Map<string, MemoryOwnershipStore>();
  const log = runnerLog();
  const runners = new Map<string, FakeRunner[]>();
  const logs: string[] = [];
  const balancers: ShardBalancer[] = [];
  const crashes = new Map<string, () => void>();
  const member = (id: string, options: ShardBalancerOptions = {}) => {
    const own = crashableClock(clock);
    crashes.set(id, () => own.crash());
    const store = new MemoryOwnershipStore({ deployment: ownership });
    stores.set(id, store);
    const balancer = new ShardBalancer({
      ownership: store,
      memberId: id,
      runners: (shard) => {
        const runner = new FakeRunner(id, shard, clock, log);
        runners.set(id, [...(runners.get(id) ?? []), runner]);
        return runner;
      },
      options: { clock: own.clock, random: seeded(id.charCodeAt(0)), log: (line) => logs.push(`${id}: ${line}`), ...options },
    });
    balancers.push(balancer);
    balancer.start();
    return balancer;
  };
  /** Kills member `id`: its loop never runs again, its store calls fail, its leases run out, its runners are gone. */
  const crash = (id: string) => {
    crashes.get(id)?.();
    stores.get(id)?.crash({ unreachable: true });
    log.live.delete(id);
  };
  return { clock, ownership, log, runners, logs, member, crash, balancers };
}

describe('ShardBalancer', () => {
  it('a lone member claims every shard in its first round and then heartbeats every 10 s ±20 %', async () => {
    const w = world(4);
    const a = w.member('a');
    await w.clock.advance(0);
    expect(a.held()).toEqual([0, 1, 2, 3]);
    expect(a.health().phase).toBe('running');
    expect(w.ownership.epochs()).toEqual([1, 1, 1, 1]);
    const rounds: number[] = [];
    for (let i = 0; i < 20; i++) {
      const next = w.clock.nextTimerAt()!;
      rounds.push(next - w.clock.now());
      await w.clock.advanceTo(next);
    }
    for (const gap of rounds) {
      expect(gap).toBeGreaterThanOrEqual(8_000);
      expect(gap).toBeLessThanOrEqual(12_000);
    }
    expect(new Set(rounds).size).toBeGreaterThan(1);
    expect(w.ownership.calls.heartbeat).toBe(21);
    expect(w.ownership.calls.claim).toBe(4);
    await a.stop();
  });

  it('hands over to a member that joins, one shard per round, until 2/2; epochs count the moves', async () => {
    const w = world(4);
    const a = w.member('a');
    await w.clock.advance(0);
    const b = w.member('b');
    await w.clock.advance(0);
    expect(b.held()).toEqual([]);
    expect(b.health().phase).toBe('standby');
    await w.clock.runUntil(
      () => b.held().length === 2,
      () => w.logs.join('\n'),
      { withinMs: 4 * 12_000 },
    );
    expect(a.held()).toEqual([0, 1]);
    expect(b.held()).toEqual([2, 3]);
    expect(w.log.events.filter((e) => e.startsWith('stop'))).toEqual(['stop 3 a', 'stop 2 a']);
    expect(w.ownership.epochs()).toEqual([1, 1, 2, 2]);
    // Then nothing moves.
    const claims = w.ownership.claims.length;
    await w.clock.advance(50 * 12_000);
    expect(w.ownership.claims.length).toBe(claims);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('more members than shards: the extra member is a standby; it takes over when a holder stops (SIGTERM)', async () => {
    const w = world(2);
    const [a, b] = [w.member('a'), w.member('b')];
    await w.clock.advance(0);
    const c = w.member('c');
    await w.clock.advance(30_000);
    expect([a.held().length, b.held().length, c.held()]).toEqual([1, 1, []]);
    expect(c.health().phase).toBe('standby');
    const shardOfA = a.held()[0]!;
    await a.stop();
    // Stopping stopped the runner (its batch finished, its stats written) and released its lease, and a left.
    expect(w.log.events).toContain(`stop ${shardOfA} a`);
    expect(w.ownership.holderOf(shardOfA)).toBeNull();
    expect(a.health().phase).toBe('stopped');
    expect(w.ownership.calls.leave).toBe(1);
    await w.clock.runUntil(
      () => c.held().length === 1,
      () => w.logs.join('\n'),
      { withinMs: 12_000 },
    );
    expect(c.held()).toEqual([shardOfA]);
    await Promise.all([b.stop(), c.stop()]);
  });

  it('a shard whose owner crashed is taken once its lease ran out, never before', async () => {
    const w = world(2);
    const [a, b] = [w.member('a'), w.member('b')];
    await w.clock.advance(30_000);
    expect([a.held().length, b.held().length]).toEqual([1, 1]);
    const lost = b.held()[0]!;
    // b's process dies: its lease is no longer renewed; its loop no longer runs.
    const crashedAt = w.clock.now();
    w.crash('b');
    await w.clock.runUntil(
      () => a.held().length === 2,
      () => w.logs.join('\n'),
      { withinMs: 60_000 + 12_000 },
    );
    const taken = w.ownership.claims.find((c) => c.shard === lost && c.owner === 'a')!;
    expect(taken.at).toBeGreaterThanOrEqual(crashedAt + 60_000);
    await a.stop();
  });

  it('a manifest change releases every shard, then balances on the new count', async () => {
    const w = world(2);
    const a = w.member('a');
    await w.clock.advance(0);
    expect(a.held()).toEqual([0, 1]);
    // Another coordinator grew the deployment to 4 shards (it may, as a's leases are held, only here).
    w.ownership.setManifest(4);
    await w.clock.runUntil(
      () => a.held().length === 4,
      () => w.logs.join('\n'),
      { withinMs: 12_000 },
    );
    expect(w.log.events.slice(0, 4)).toEqual(['start 0 a', 'start 1 a', 'stop 0 a', 'stop 1 a']);
    expect(
      w.runners
        .get('a')!
        .filter((r) => r.index < 2)
        .map((r) => r.shard.count),
    ).toEqual([2, 2, 4, 4]);
    expect(w.logs.some((l) => l.includes('the shard manifest changed (2 → 4 shards)'))).toBe(true);
    await a.stop();
  });

  it('a runner stalled for half a lease stops renewing: its lease runs out (the runner halts), and the shard is claimed again only after that', async () => {
    const w = world(2);
    const [a, b] = [w.member('a'), w.member('b')];
    await w.clock.advance(30_000);
    const shard = b.held()[0]!;
    const runner = w.runners.get('b')!.find((r) => r.index === shard)!;
    const stalledAt = w.clock.now();
    runner.stall();
    await w.clock.runUntil(
      () => w.log.events.includes(`lost ${shard} b`),
      () => w.logs.join('\n'),
      { withinMs: 30_000 + 12_000 + 60_000 },
    );
    // Half a lease of silence (noticed at the next round), then the lease's whole duration.
    const lostAt = w.clock.now();
    expect(lostAt).toBeGreaterThanOrEqual(stalledAt + 30_000 + 60_000);
    expect(w.logs.some((l) => l.startsWith(`b: shard ${shard}: its runner has not gone round`))).toBe(true);
    expect(w.ownership.claims.filter((c) => c.shard === shard)).toHaveLength(1);
    // b is short now, and a at its share: b claims it again, with a new runner, but not within 3 rounds of the stall.
    await w.clock.runUntil(
      () => w.ownership.claims.length === 3,
      () => w.logs.join('\n'),
      { withinMs: 5 * 12_000 },
    );
    const again = w.ownership.claims[2]!;
    expect(again).toMatchObject({ shard, owner: 'b', epoch: 2 });
    const stallSeen = w.logs.findIndex((l) => l.includes('has not gone round'));
    expect(stallSeen).toBeGreaterThanOrEqual(0);
    expect(again.at).toBeGreaterThanOrEqual(lostAt);
    // Three rounds (at least 8 s each) after the one that found the lease lost.
    expect(again.at).toBeGreaterThanOrEqual(lostAt + 3 * 8_000);
    expect(w.runners.get('b')!.filter((r) => r.index === shard)).toHaveLength(2);
    expect(a.held()).toHaveLength(1);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('a claim lost to another member (409/412) is skipped; the shard is tried again next round', async () => {
    const w = world(2);
    let fail = true;
    w.ownership.faults.claim = (shard) => shard === 1 && fail;
    const a = w.member('a');
    await w.clock.advance(0);
    expect(a.held()).toEqual([0]);
    fail = false;
    await w.clock.runUntil(() => a.held().length === 2, undefined, { withinMs: 12_000 });
    await a.stop();
  });

  it('a list failing for a while is logged and tried again next round; a manifest of an unknown version stops it, shards released, run() rejecting', async () => {
    const w = world(2);
    const a = w.member('a');
    await w.clock.advance(0);
    expect(a.held()).toEqual([0, 1]);
    w.ownership.faults.list = () => new JobqError('unavailable', 'the service is down');
    await w.clock.advance(25_000);
    expect(a.held()).toEqual([0, 1]);
    expect(w.logs.filter((l) => l.includes('balancing round failed: the service is down')).length).toBeGreaterThanOrEqual(2);
    w.ownership.faults.list = () => new JobqError('unsupported', 'the shard manifest has version 2; this jobq reads version 1');
    const ended = a.run().then(
      () => null,
      (e: unknown) => e,
    );
    let error: unknown;
    void ended.then((e) => (error = e));
    await w.clock.runUntil(() => error !== undefined, undefined, { withinMs: 12_000 });
    expect(isJobqError(error, 'unsupported')).toBe(true);
    expect(a.held()).toEqual([]);
    expect([w.ownership.holderOf(0), w.ownership.holderOf(1)]).toEqual([null, null]);
    expect(a.health().phase).toBe('stopped');
  });
});
