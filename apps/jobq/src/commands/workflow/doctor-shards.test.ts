import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { CoordinatorLease } from '@jobq/ports';
import type { AzureOwnershipStore } from '@jobq/store-azure';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import type { ShardView, ShardsReport } from '../../shard-views';
import { runCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';
import { forwardedChecks, membersCheck, shardOwnerChecks } from './doctor';

interface DoctorDoc {
  ok: boolean;
  checks: Array<{ name: string; status: 'ok' | 'warn' | 'fail'; message: string; hint: string | null }>;
}

const linesOf = (doc: DoctorDoc, name: string): Array<[string, string]> =>
  doc.checks.filter((c) => c.name === name).map((c) => [c.status, c.message]);

function shard(index: number, over: Partial<ShardView> = {}): ShardView {
  return {
    index,
    leased: true,
    owner: 'coord-a',
    epoch: 1,
    claimedAt: new Date(0),
    unshardedHolder: false,
    lastSignAgeMs: 1_000,
    queue: null,
    stats: null,
    statsError: null,
    ...over,
  };
}

function report(shards: ShardView[], members: string[] = ['coord-a']): ShardsReport {
  return {
    manifest: { version: 1, shards: shards.length as 4 },
    count: shards.length,
    serverTime: new Date(0),
    shards,
    members: members.map((id) => ({
      id,
      lastSeen: new Date(0),
      ageMs: 0,
      held: shards.filter((s) => s.leased && s.owner === id).map((s) => s.index),
    })),
  };
}

const stats = (messages: number, forwarded: number): NonNullable<ShardView['stats']> => ({
  writtenAt: null,
  ageMs: null,
  startedAt: null,
  messages,
  completionsApplied: 0,
  forwarded,
  poison: 0,
  receiveErrors: 0,
  shards: 4,
  owner: 'coord-a',
  epoch: 1,
});

describe('doctor shard checks (docs/sharding.md#inspecting-shards)', () => {
  it('counts a free shard as ownerless past lease + balance interval from its last owner’s last sign of life', () => {
    const checks = shardOwnerChecks(
      report([
        shard(0),
        shard(1, { leased: false, lastSignAgeMs: 79_000 }),
        shard(2, { leased: false, lastSignAgeMs: 81_000 }),
        shard(3, { leased: false, owner: null, epoch: 0, claimedAt: null, lastSignAgeMs: null }),
      ]),
    );
    expect(checks.map((c) => [c.status, c.message])).toEqual([
      [
        'warn',
        'shard 1 of 4 has no owner for now (last owned by coord-a, epoch 1; its owner last showed life 79s ago): a coordinator should claim it within 1s',
      ],
      [
        'fail',
        'shard 2 of 4 has no owner (last owned by coord-a, epoch 1; its owner last showed life 81s ago): its workflows do not progress',
      ],
      ['fail', 'shard 3 of 4 has no owner (never claimed): its workflows do not progress'],
    ]);
    expect(checks[1]!.hint).toBe('1 live coordinator (coord-a) did not claim it within 80s: check their logs');
    expect(shardOwnerChecks(report([shard(0), shard(1, { leased: false, lastSignAgeMs: null })], []))[0]!.hint).toBe(
      'no coordinator with shards is running: start a coordinator: jobq workflow coordinator --shards 2',
    );
    expect(shardOwnerChecks(report([shard(0), shard(1)]))).toEqual([
      { name: 'shard owners', status: 'ok', message: '2 shards, every one held: coord-a 2', hint: null },
    ]);
    // Shard 0 of one shard held by a coordinator without shards: that is a deployment without shards.
    expect(shardOwnerChecks(report([shard(0, { unshardedHolder: true, owner: null })]))[0]!.status).toBe('ok');
  });

  it('warns about a shard that forwarded more than 1 % of its messages, and about more coordinators than shards', () => {
    expect(forwardedChecks(report([shard(0, { stats: stats(1000, 10) }), shard(1)]))[0]!.status).toBe('ok');
    const forwarded = forwardedChecks(report([shard(0, { stats: stats(1000, 10) }), shard(1, { stats: stats(1000, 11) })]));
    expect(forwarded.map((c) => [c.status, c.message])).toEqual([
      ['warn', 'shard 1 forwarded 11 of its 1000 messages (1.1 %) to other shards since its runner started'],
    ]);
    // A counter older runners do not write reads 0.
    expect(forwardedChecks(report([shard(0, { stats: stats(0, 0) })]))).toMatchObject([{ status: 'ok' }]);
    expect(membersCheck(report([shard(0), shard(1)], ['coord-a', 'coord-b', 'coord-c']))).toMatchObject({
      status: 'warn',
      message: '3 live coordinators for 2 shards: coord-b, coord-c hold none',
    });
    expect(membersCheck(report([shard(0), shard(1)], ['coord-a']))).toMatchObject({ status: 'ok' });
  });
});

let storage: TestStorage;
let troubled: string;
let troubledDeployment: Deployment;
let troubledOwnership: AzureOwnershipStore;
let oldLease: CoordinatorLease | null = null;

beforeAll(async () => {
  storage = await startTestStorage();
  troubled = uniquePrefix('DocShards');
  troubledDeployment = await openDeployment(configFromFlags({}, storage.env(troubled)));
  await troubledDeployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'sharded-1' });
  troubledOwnership = await troubledDeployment.ownership();
  await troubledOwnership.ensureManifest(4);
  await troubledDeployment.shardCompletions(1);
  await troubledDeployment.shardCompletions(2);
});
afterAll(async () => {
  await troubledOwnership?.release(1);
  await oldLease?.release();
  await storage.stop();
});

describe('jobq workflow doctor on a deployment with shards', () => {
  it('names each shard finding, one line each with what to do: owners, queues, forwarded, coordinators', async () => {
    const d = troubledDeployment;
    const ownership = troubledOwnership;
    // Shard 0: the lease of a coordinator without shards (it records no owner).
    oldLease = await d.store.acquireLease();
    // Shard 1: held, forwarding 5 % of its messages.
    expect(await ownership.claim(1, 'coord-a')).not.toBeNull();
    const now = new Date().toISOString();
    await d.store.writeCoordinatorStats(
      { messages: 1000, forwarded: 50, startedAt: now, writtenAt: now, shard: 1, shards: 4, owner: 'coord-a', epoch: 1 },
      { shard: 1 },
    );
    // Shard 2: released a moment ago (a hand-over under way). Shard 3: never claimed, and its queue missing.
    expect(await ownership.claim(2, 'coord-b')).not.toBeNull();
    await ownership.release(2);
    // Five coordinators for four shards.
    for (const id of ['coord-a', 'coord-b', 'coord-c', 'coord-d', 'coord-e']) await ownership.heartbeat(id);

    const json = await runCli(['workflow', 'doctor', '--json'], { env: storage.env(troubled) });
    expect(json.code).toBe(1);
    const doc = JSON.parse(json.stdout) as DoctorDoc;
    const queue = `${troubled.toLowerCase()}-workflow-completions`;
    expect(linesOf(doc, 'shard owners')).toEqual([
      [
        'fail',
        "shard 0 of 4 is held by a coordinator without shards (no claim recorded an owner): it works every shard's workflows beside their owners and keeps shard 0 from its sharded owner",
      ],
      [
        'warn',
        expect.stringMatching(/^shard 2 of 4 has no owner for now \(last owned by coord-b, epoch 1; its owner last showed life \d+s ago\)/),
      ],
      ['fail', 'shard 3 of 4 has no owner (never claimed): its workflows do not progress'],
    ]);
    expect(linesOf(doc, 'shard queues')).toEqual([
      ['fail', `shard 3's completion queue ${queue}-3 does not exist: completions sent to it are lost to that shard`],
    ]);
    expect(linesOf(doc, 'forwarded messages')).toEqual([
      ['warn', expect.stringMatching(/^shard 1 forwarded 50 of its 1000 messages \(5\.0 %\) to other shards since its runner started/)],
    ]);
    expect(linesOf(doc, 'coordinators')).toEqual([
      ['warn', '5 live coordinators for 4 shards: coord-b, coord-c, coord-d and 1 more hold none'],
    ]);
    // The checks of a deployment without shards are all still there, in their order.
    const names = [...new Set(doc.checks.map((c) => c.name))];
    expect(names.slice(0, 6)).toEqual(['config', 'store', 'completion queue', 'coordinator lease', 'coordinator stats', 'shard owners']);

    const text = await runCli(['workflow', 'doctor'], { env: storage.env(troubled) });
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/✖ shard owners\s+shard 3 of 4 has no owner \(never claimed\)/);
    expect(text.stdout).toContain(
      '→ stop it (an older jobq, or a coordinator started without --shards) and run jobq workflow coordinator --shards 4',
    );
    expect(text.stdout).toMatch(/✖ shard queues\s+shard 3's completion queue \S+-3 does not exist/);
    expect(text.stdout).toMatch(/⚠ forwarded messages\s+shard 1 forwarded 50/);
    expect(text.stdout).toMatch(/⚠ coordinators\s+5 live coordinators for 4 shards/);
  });

  it('tells a coordinator without shards on shard 0 by its stats after a sharded claim, and passes the healthy shards', async () => {
    const prefix = uniquePrefix('DocShardsOld');
    const d = await openDeployment(configFromFlags({}, storage.env(prefix)));
    const ownership = await d.ownership();
    await ownership.ensureManifest(2);
    await d.shardCompletions(1);
    await ownership.heartbeat('coord-a');
    // A sharded coordinator held shard 0 and let it go; an old one took it and writes stats without a shard count.
    expect(await ownership.claim(0, 'coord-a')).not.toBeNull();
    await ownership.release(0);
    const lease = await d.store.acquireLease();
    expect(await ownership.claim(1, 'coord-a')).not.toBeNull();
    try {
      const at = new Date().toISOString();
      await d.store.writeCoordinatorStats({ messages: 10, startedAt: at, writtenAt: at });
      const result = await runCli(['workflow', 'doctor', '--json'], { env: storage.env(prefix) });
      const doc = JSON.parse(result.stdout) as DoctorDoc;
      expect(linesOf(doc, 'shard owners')).toEqual([
        [
          'fail',
          "shard 0 of 2 is held by a coordinator without shards (its stats have no shard count): it works every shard's workflows beside their owners and keeps shard 0 from its sharded owner",
        ],
      ]);
      expect(linesOf(doc, 'shard queues')).toEqual([['ok', '2 completion queues, about 0 messages waiting (0: 0, 1: 0)']]);
      expect(linesOf(doc, 'forwarded messages')).toEqual([['ok', '0 of 10 messages forwarded to another shard']]);
      expect(linesOf(doc, 'coordinators')).toEqual([['ok', '1 live coordinator for 2 shards: coord-a 1']]);
    } finally {
      await ownership.release(1);
      await lease.release();
    }
  });
});
