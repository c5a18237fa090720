import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Worker } from '@jobq/worker';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import { createWorker } from '../../services';
import { exitOf, pollUntil, runCli, startCli, type RunningCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

// The sharding commands (docs/sharding.md#running-sharded-coordinators): `workflow coordinator --shards`,
// `workflow reshard` and `workflow break-lease --shard`, on Azurite through the built CLI.

async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

let storage: TestStorage;
const started: RunningCli[] = [];
let worker: Worker | null = null;

beforeAll(async () => {
  storage = await startTestStorage();
});
afterAll(async () => {
  await worker?.stop({ gracePeriodInMs: 0 });
  for (const running of started) running.child.kill('SIGKILL');
  await storage.stop();
});

/** A fast sharded coordinator for tests: 15 s shard leases, 1 s balancing rounds. */
const FAST = ['--shard-lease-duration', '15s', '--balance-interval', '1s', '--idle-sleep', '0.2', '--cancel-poll-interval', '0.2s'];

describe('jobq workflow coordinator --shards', () => {
  it('refuses a shard count other than 1, 2, 4, 8 or 16 (exit 2, naming the allowed values)', async () => {
    const env = storage.env(uniquePrefix('ShardBad'));
    // 0 and 32, and the environment and file keys: config.test.ts.
    const refused = await runCli(['workflow', 'coordinator', '--shards', '3'], { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe('jobq: --shards: 3 is not allowed (one of 1, 2, 4, 8, 16)\n');
  });

  it('creates the manifest and runs a workflow as a one-shard balancer; others must match it; SIGTERM releases the shard', async () => {
    const prefix = uniquePrefix('ShardRun');
    const env = storage.env(prefix);
    const coordinator = startCli(['workflow', 'coordinator', '--shards', '1', '--member-id', 'c-1', '--health-port', '0', ...FAST], env);
    started.push(coordinator);
    await pollUntil('shard 0 to be claimed', () => coordinator.stderr().includes('shard 0: claimed'));
    expect(coordinator.stderr()).toContain('Coordinator running as member c-1 of 1 shard: balancing them every 1s (shard leases of 15s)');
    expect(coordinator.stderr()).toContain('shards=1 (flag --shards)');
    expect(coordinator.stderr()).toContain('balance-interval=1s (flag --balance-interval)');

    const port = /health: serving http:\/\/0\.0\.0\.0:(\d+)\/livez/.exec(coordinator.stderr())?.[1];
    expect(port).toBeDefined();
    const ready = await getJson(`http://127.0.0.1:${port}/readyz`);
    expect(ready).toMatchObject({
      status: 200,
      body: { role: 'coordinator', member_id: 'c-1', shard_count: 1, holds: 'shards', shards: [0] },
    });

    // A differing count names reshard; --break-lease is refused with a pointer to break-lease --shard.
    const differs = await runCli(['workflow', 'coordinator', '--shards', '4'], { env });
    expect(differs.code).toBe(2);
    expect(differs.stderr).toContain('differs from the 1 shards');
    expect(differs.stderr).toContain('jobq workflow reshard --shards 4');
    const breaking = await runCli(['workflow', 'coordinator', '--break-lease'], { env });
    expect(breaking.code).toBe(2);
    expect(breaking.stderr).toContain('break-lease --shard');
    const outOfRange = await runCli(['workflow', 'break-lease', '--shard', '1', '-y'], { env });
    expect(outOfRange.code).toBe(2);
    expect(outOfRange.stderr).toContain('--shard 1 is out of range');

    const submitted = await runCli(['workflow', 'submit', await storage.file('two.yaml', TWO_TASKS)], { env });
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    const deployment: Deployment = await openDeployment(configFromFlags({}, env));
    worker = await createWorker(deployment, { queue: 'default', numWorkers: 2, maxIdleBackoffInMs: 200, log: () => {} });
    const workerRun = worker.run();
    await pollUntil('the workflow to complete', async () => (await deployment.client.status(id))?.status === 'completed');
    await worker.stop();
    await workerRun;
    worker = null;

    coordinator.child.kill('SIGTERM');
    expect(await exitOf(coordinator)).toBe(0);
    const stopped = /Coordinator stopped — (\d+) completions, (\d+) tasks pushed, \d+ batches \(member c-1; shards run: 0\)/.exec(
      coordinator.stderr(),
    );
    expect(stopped).not.toBeNull();
    expect(Number(stopped?.[1])).toBeGreaterThanOrEqual(2);
    expect(Number(stopped?.[2])).toBeGreaterThanOrEqual(2);
    const view = await (await deployment.ownership()).list();
    expect(view.shards).toEqual([expect.objectContaining({ index: 0, leased: false, owner: 'c-1', epoch: 1 })]);
    expect(view.members).toEqual([]);
  });

  it('exits 1 with one line for a manifest of an unknown version', async () => {
    const prefix = uniquePrefix('ShardVer');
    const env = storage.env(prefix);
    const deployment = await openDeployment(configFromFlags({}, env));
    const sdk = createRequire(join(__dirname, '..', '..', '..', '..', '..', 'packages', 'store-azure', 'package.json'))(
      '@azure/storage-blob',
    ) as {
      BlobServiceClient: {
        fromConnectionString(text: string): {
          getContainerClient(name: string): {
            getBlockBlobClient(name: string): { upload(body: string, length: number): Promise<unknown> };
          };
        };
      };
    };
    const container = sdk.BlobServiceClient.fromConnectionString(storage.azurite.connectionString).getContainerClient(
      deployment.store.names.workflowsContainer,
    );
    const text = '{"version":2,"shards":4}';
    await container.getBlockBlobClient('_shards/manifest.json').upload(text, text.length);
    const refused = await runCli(['workflow', 'coordinator'], { env });
    expect(refused.code).toBe(1);
    const lines = refused.stderr.split('\n').filter((l) => l.startsWith('jobq:'));
    expect(lines).toEqual([expect.stringContaining('unsupported: the shard manifest _shards/manifest.json has version 2')]);
  });
});

describe('jobq workflow reshard and break-lease --shard', () => {
  it('grows 1 → 4, creating the queues and leaving queued messages where they are; refuses shrinking and non-multiples', async () => {
    const prefix = uniquePrefix('Reshard');
    const env = storage.env(prefix);
    const deployment = await openDeployment(configFromFlags({}, env));
    const ownership = await deployment.ownership();

    const three = await runCli(['workflow', 'reshard', '--shards', '3', '-y'], { env });
    expect(three.code).toBe(2);
    expect(three.stderr).toContain('one of 1, 2, 4, 8, 16');

    // A message queued before the reshard stays in shard 0's queue.
    await deployment.completions.send({ body: '{"queued":"before the reshard"}' });
    const grown = await runCli(['workflow', 'reshard', '--shards', '4', '-y'], { env });
    expect(grown.code).toBe(0);
    const base = `${deployment.completions.name}`;
    expect(grown.stdout).toBe(`Resharded devstoreaccount1/${prefix}: 1 → 4 shards (completion queues ${base}-1 … ${base}-3 created).\n`);
    expect((await ownership.readManifest())?.manifest).toEqual({ version: 1, shards: 4 });
    expect(await deployment.completions.approximateMessageCount()).toBe(1);
    for (const shard of [1, 2, 3]) expect(await (await deployment.shardCompletions(shard)).approximateMessageCount()).toBe(0);

    const shrink = await runCli(['workflow', 'reshard', '--shards', '2', '-y'], { env });
    expect(shrink.code).toBe(2);
    expect(shrink.stderr).toContain('shards only grow');
    expect(shrink.stderr).toContain('new prefix');
  });

  it('refuses to grow while a shard lease is held, naming it; break-lease --shard breaks one shard lease or all', async () => {
    const prefix = uniquePrefix('Reshard');
    const env = storage.env(prefix);
    const deployment = await openDeployment(configFromFlags({}, env));
    const ownership = await deployment.ownership();
    await ownership.ensureManifest(4);

    // A held lease refuses the grow, naming the shard and its owner.
    const claim = await ownership.claim(2, 'holder-1');
    expect(claim).not.toBeNull();
    const held = await runCli(['workflow', 'reshard', '--shards', '8', '-y'], { env });
    expect(held.code).toBe(1);
    const heldLines = held.stderr.split('\n').filter((l) => l.startsWith('jobq:'));
    expect(heldLines).toHaveLength(1);
    expect(heldLines[0]).toContain('shard 2 (holder-1)');
    expect(heldLines[0]).toContain('stop every coordinator');
    expect((await ownership.readManifest())?.manifest.shards).toBe(4);

    // break-lease --shard 2 frees it; --shard all breaks each shard's lease.
    const broken = await runCli(['workflow', 'break-lease', '--shard', '2', '-y'], { env });
    expect(broken.code).toBe(0);
    expect(broken.stdout).toBe(`Lease of shard 2 broken for devstoreaccount1/${prefix}.\n`);
    expect((await ownership.list()).shards.map((s) => s.leased)).toEqual([false, false, false, false]);
    await claim?.lease.release().catch(() => undefined);
    const all = await runCli(['workflow', 'break-lease', '--shard', 'all', '-y'], { env });
    expect(all.code).toBe(0);
    expect(all.stdout.trim().split('\n')).toEqual([0, 1, 2, 3].map((k) => `Lease of shard ${k} broken for devstoreaccount1/${prefix}.`));

    const eight = await runCli(['workflow', 'reshard', '--shards', '8', '-y'], { env });
    expect(eight.code).toBe(0);
    expect((await ownership.readManifest())?.manifest.shards).toBe(8);
  });
});
