/**
 * One sharded coordinator process of the shards bench's balancing part (`shards.ts`): the real
 * `AzureOwnershipStore` (15 s shard leases, renewed every 5 s), `ShardBalancer` (1 s interval) and
 * shard runners (`coordinatorRunners`: a `Coordinator` per shard held) on the account of
 * `JOBQ_BENCH_CONNECTION_STRING`, prefix `JOBQ_BENCH_PREFIX`, `JOBQ_BENCH_SHARDS` shards. SIGTERM
 * stops it as `jobq workflow coordinator` stops (every shard released, the member record removed).
 *
 * Lines on stdout: `ready <ms>` once the balancer starts, `held <ms> <k,k,…>` when the shards it
 * holds change, `requests <ms> <n>` every second (the ownership store's blob requests so far).
 *
 * Usage: node dist/shards-member.js MEMBER_ID
 */
import { coordinatorRunners, ShardBalancer } from '@jobq/coordinator';
import { shardCompletionQueue, SHARD_COUNTS, type ShardCount, type TaskQueue } from '@jobq/ports';
import { openStorageQueue } from '@jobq/queue-storage';
import { openOutputStore, openOwnershipStore, openWorkflowStore } from '@jobq/store-azure';

async function main(): Promise<void> {
  const memberId = process.argv[2] ?? 'member';
  const connection = { connectionString: process.env.JOBQ_BENCH_CONNECTION_STRING ?? '' };
  const prefix = process.env.JOBQ_BENCH_PREFIX ?? '';
  const shards = Number(process.env.JOBQ_BENCH_SHARDS ?? '8') as ShardCount;
  if (!SHARD_COUNTS.includes(shards)) throw new Error(`JOBQ_BENCH_SHARDS: ${shards} is not one of ${SHARD_COUNTS.join(', ')}`);
  let requests = 0;
  const ownership = await openOwnershipStore({
    connection,
    prefix,
    leaseDurationInMs: 15_000,
    renewIntervalInMs: 5_000,
    // As the CLI does with a short lease: a killed member stops counting as live when its leases run out.
    memberLiveForInMs: 15_000,
    blobPolicies: [
      {
        create: (next) => ({
          sendRequest: (request) => {
            requests++;
            return next.sendRequest(request);
          },
        }),
      },
    ],
  });
  await ownership.ensureManifest(shards);
  const store = await openWorkflowStore({ connection, prefix });
  const outputs = await openOutputStore({ connection, prefix });
  const completions: TaskQueue[] = [];
  for (let k = 0; k < shards; k++)
    completions.push(
      await openStorageQueue({ connection, queueName: shardCompletionQueue(store.names.completionQueue, k), lockDurationInMs: 60_000 }),
    );
  const tasks = await openStorageQueue({ connection, queueName: `${prefix.toLowerCase()}-default`, lockDurationInMs: 60_000 });
  const balancer = new ShardBalancer({
    ownership,
    memberId,
    runners: coordinatorRunners({
      store,
      outputs,
      completions: (k) => completions[k]!,
      queues: () => tasks,
      options: { log: () => undefined },
    }),
    options: { balanceIntervalInMs: 1_000, log: () => undefined },
  });
  let last = '';
  const report = () => {
    const held = balancer.held().join(',');
    if (held !== last) {
      last = held;
      process.stdout.write(`held ${Date.now()} ${held}\n`);
    }
  };
  const watch = setInterval(report, 10);
  const counts = setInterval(() => process.stdout.write(`requests ${Date.now()} ${requests}\n`), 1_000);
  process.once('SIGTERM', () => {
    void balancer.stop().finally(() => {
      report();
      clearInterval(watch);
      clearInterval(counts);
      process.exit(0);
    });
  });
  process.stdout.write(`ready ${Date.now()}\n`);
  await balancer.run();
}

main().catch((error: unknown) => {
  process.stderr.write(`shards member failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
