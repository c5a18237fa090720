import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { CoordinatorLease } from '@jobq/ports';
import type { AzureOwnershipStore } from '@jobq/store-azure';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import type { WorkflowShardsJson } from '../../json-output';
import { runCli } from '../../test-helpers/cli';
import { schemaErrors } from '../../test-helpers/json-schema';
import { idOnShard, writeManifestText } from '../../test-helpers/shards';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

// A deployment of 4 shards, set up through the stores as coordinators would leave it (no coordinator
// runs): shards 0 and 1 held by coord-a, shard 2 by coord-b, shard 3 never claimed and its queue never created.

let storage: TestStorage;
let sharded: string;
let single: string;
let deployment: Deployment;
let ownership: AzureOwnershipStore;
let oldLease: CoordinatorLease | null = null;
let singleDeployment: Deployment;
const onShard1 = idOnShard('wf', 1, 4);
const onShard3 = idOnShard('wf', 3, 4);

beforeAll(async () => {
  storage = await startTestStorage();
  sharded = uniquePrefix('Shards');
  single = uniquePrefix('ShardsOne');
  deployment = await openDeployment(configFromFlags({}, storage.env(sharded)));
  // Submitted before the manifest is written: both wake-ups wait in shard 0's queue.
  await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: onShard1 });
  await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: onShard3 });
  ownership = await deployment.ownership();
  await ownership.ensureManifest(4);
  await deployment.shardCompletions(1);
  await deployment.shardCompletions(2);
  expect(await ownership.claim(0, 'coord-a')).not.toBeNull();
  expect(await ownership.claim(1, 'coord-a')).not.toBeNull();
  expect(await ownership.claim(2, 'coord-b')).not.toBeNull();
  await ownership.heartbeat('coord-a');
  await ownership.heartbeat('coord-b');
  const now = new Date().toISOString();
  await deployment.store.writeCoordinatorStats(
    {
      messages: 200,
      completionsApplied: 150,
      forwarded: 4,
      startedAt: now,
      writtenAt: now,
      shard: 1,
      shards: 4,
      owner: 'coord-a',
      epoch: 1,
    },
    { shard: 1 },
  );

  singleDeployment = await openDeployment(configFromFlags({}, storage.env(single)));
  await singleDeployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'one-1' });
});
afterAll(async () => {
  for (const k of [0, 1, 2]) await ownership?.release(k);
  await oldLease?.release();
  await storage.stop();
});

describe('jobq workflow shards', () => {
  it('shows each shard: owner, epoch, lease, queue and its length, counters; then the live members', async () => {
    const result = await runCli(['workflow', 'shards'], { env: storage.env(sharded) });
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toContain(`devstoreaccount1/${sharded}: 4 shards (manifest version 1)`);
    const queue = `${sharded.toLowerCase()}-workflow-completions`;
    expect(out).toMatch(new RegExp(`^\\s*0\\s+coord-a\\s+1\\s+held\\s+${queue}\\s+2\\s+-\\s+-\\s+-\\s+none$`, 'm'));
    expect(out).toMatch(new RegExp(`^\\s*1\\s+coord-a\\s+1\\s+held\\s+${queue}-1\\s+\\d+\\s+200\\s+150\\s+4\\s+\\d+s ago$`, 'm'));
    expect(out).toMatch(new RegExp(`^\\s*2\\s+coord-b\\s+1\\s+held\\s+${queue}-2\\s+0\\s`, 'm'));
    expect(out).toMatch(new RegExp(`^\\s*3\\s+-\\s+0\\s+free\\s+${queue}-3\\s+missing\\s`, 'm'));
    expect(out).toContain('Members (2 live)');
    expect(out).toMatch(/^coord-a\s+\d+s ago\s+2\s+0, 1$/m);
    expect(out).toMatch(/^coord-b\s+\d+s ago\s+1\s+2$/m);
  });

  it('prints the same as one JSON document with --json (snake_case, its schema)', async () => {
    const result = await runCli(['workflow', 'shards', '--json'], { env: storage.env(sharded) });
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as WorkflowShardsJson;
    expect(schemaErrors('workflow-shards', doc)).toEqual([]);
    expect(doc).toMatchObject({ target: `devstoreaccount1/${sharded}`, manifest: { version: 1, shards: 4 }, shard_count: 4 });
    expect(doc.shards.map((s) => [s.index, s.leased, s.owner, s.epoch, s.queue_state])).toEqual([
      [0, true, 'coord-a', 1, 'ok'],
      [1, true, 'coord-a', 1, 'ok'],
      [2, true, 'coord-b', 1, 'ok'],
      [3, false, null, 0, 'missing'],
    ]);
    expect(doc.shards[1]).toMatchObject({
      queue: `${sharded.toLowerCase()}-workflow-completions-1`,
      claimed_at: expect.any(String),
      held_without_shards: false,
      stats: { messages: 200, completions_applied: 150, forwarded: 4, poison: 0, receive_errors: 0 },
    });
    expect(doc.shards[3]).toMatchObject({ claimed_at: null, approximate_message_count: null, stats: null });
    expect(doc.shards.map((s) => s.approximate_message_count)).toEqual([2, 0, 0, null]);
    expect(doc.members.map((m) => [m.member_id, m.shards_held])).toEqual([
      ['coord-a', 2],
      ['coord-b', 1],
    ]);
    expect(doc.members[0]!.age_s).toBeGreaterThanOrEqual(0);
  });

  it('shows a deployment without a manifest as one shard, held by a coordinator without shards', async () => {
    oldLease = await singleDeployment.store.acquireLease();
    const text = await runCli(['workflow', 'shards'], { env: storage.env(single) });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`devstoreaccount1/${single}: no manifest: one shard`);
    expect(text.stdout).toMatch(/^\s*0\s+\(without shards\)\s+0\s+held\s+\S+-workflow-completions\s+1\s/m);
    expect(text.stdout).toContain('No live members');
    const json = await runCli(['workflow', 'shards', '--json'], { env: storage.env(single) });
    const doc = JSON.parse(json.stdout) as WorkflowShardsJson;
    expect(schemaErrors('workflow-shards', doc)).toEqual([]);
    expect(doc).toMatchObject({ manifest: null, shard_count: 1, members: [] });
    expect(doc.shards).toHaveLength(1);
    expect(doc.shards[0]).toMatchObject({ leased: true, owner: null, held_without_shards: true, approximate_message_count: 1 });
  });

  it('exits 1 with one line for a manifest of an unknown version', async () => {
    const prefix = uniquePrefix('ShardsV2');
    await openDeployment(configFromFlags({}, storage.env(prefix)));
    await writeManifestText(storage.azurite, prefix, JSON.stringify({ version: 2, shards: 4 }));
    const result = await runCli(['workflow', 'shards'], { env: storage.env(prefix) });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('the shard manifest _shards/manifest.json has version 2');
  });
});

describe('jobq workflow explain names the shard', () => {
  it("says the workflow's shard and its owner, or that it has none; --json has them as shard", async () => {
    const owned = await runCli(['workflow', 'explain', onShard1], { env: storage.env(sharded) });
    expect(owned.code).toBe(0);
    expect(owned.stdout).toMatch(/^Shard\s+1 of 4, owned by coord-a \(epoch 1\)$/m);
    const free = await runCli(['workflow', 'explain', onShard3, '--task', 'a'], { env: storage.env(sharded) });
    expect(free.code).toBe(0);
    expect(free.stdout).toMatch(/^Shard\s+3 of 4, no owner$/m);
    const json = await runCli(['workflow', 'explain', onShard1, '--json'], { env: storage.env(sharded) });
    const doc = JSON.parse(json.stdout) as { shard?: unknown };
    expect(schemaErrors('workflow-explain', doc)).toEqual([]);
    expect(doc.shard).toEqual({ index: 1, count: 4, leased: true, owner: 'coord-a', epoch: 1, held_without_shards: false });
  });

  it('says nothing of shards without a manifest', async () => {
    const text = await runCli(['workflow', 'explain', 'one-1'], { env: storage.env(single) });
    expect(text.code).toBe(0);
    expect(text.stdout).not.toMatch(/^Shard/m);
  });
});
