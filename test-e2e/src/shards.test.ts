// Sharded coordinators as real processes (docs/sharding.md#running-sharded-coordinators): 8 shards,
// coordinators with 15 s shard leases balancing every second, against Azurite in this process.
// Ownership is read through the ownership store opened here; every hand-over is awaited with a
// deadline of twice its bound (a safety net that fails the test, not a measurement).
import { afterAll, describe, expect, it } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { OwnershipView } from '@jobq/ports';
import { openOwnershipStore } from '@jobq/store-azure';
import type { CliProcess } from './cli';
import { runCli } from './cli';
import {
  ProcessGroup,
  SharedStorage,
  coordinatorArgs,
  crash,
  deployment,
  eventually,
  logsOf,
  stopProcess,
  summary,
  tempDir,
  workerArgs,
} from './stack';

const storage = new SharedStorage();
const processes = new ProcessGroup();

afterAll(async () => {
  await processes.killAll();
  await storage.stop();
});

const LEASE_MS = 15_000;
const INTERVAL_MS = 1_000;

/** How many shards each member holds now (leased shards only), as `{member: count}`. */
function holdings(view: OwnershipView): Record<string, number> {
  const out: Record<string, number> = {};
  for (const shard of view.shards) if (shard.leased && shard.owner !== null) out[shard.owner] = (out[shard.owner] ?? 0) + 1;
  return out;
}

/** The counts held, highest first: `[3, 3, 2]`. */
function spread(view: OwnershipView): number[] {
  return Object.values(holdings(view)).sort((a, b) => b - a);
}

describe('sharded coordinators (real processes, Azurite)', () => {
  it('8 shards over 3 coordinators: 3/3/2; kill -9 one → re-owned; 4 members → 2/2/2/2; SIGTERM one → taken; every workflow completes once', async () => {
    const deploy = await deployment(storage, 'shards');
    const ownership = await openOwnershipStore({
      connection: { connectionString: deploy.storage.connectionString },
      prefix: deploy.prefix,
    });
    const dir = await tempDir('shards');
    const procs: Record<string, CliProcess | undefined> = {};
    const logs = () => logsOf(procs);
    let last: OwnershipView | null = null;
    const describeView = () =>
      `last ownership: ${last === null ? 'none' : JSON.stringify(last.shards.map((s) => [s.index, s.leased, s.owner, s.epoch]))}\n${logs()}`;
    /** Waits until every shard is leased and the members hold `expected` (owners among `members`). */
    const balanced = (what: string, members: string[], expected: number[], deadlineInMs: number) =>
      eventually(
        what,
        async () => {
          last = await ownership.list();
          const owners = Object.keys(holdings(last));
          const allLeased = last.shards.every((s) => s.leased);
          return allLeased && owners.every((o) => members.includes(o)) && JSON.stringify(spread(last)) === JSON.stringify(expected)
            ? last
            : undefined;
        },
        deadlineInMs,
        describeView,
      );
    const coordinator = (id: string) => {
      const proc = processes.start(
        coordinatorArgs([
          '--shards',
          '8',
          '--member-id',
          id,
          '--shard-lease-duration',
          `${LEASE_MS / 1000}s`,
          '--balance-interval',
          `${INTERVAL_MS / 1000}s`,
        ]),
        { env: deploy.env() },
      );
      procs[id] = proc;
      return proc;
    };
    try {
      const files: string[] = [];
      for (let i = 0; i < 60; i++) {
        const path = join(dir.path, `w${i}.json`);
        await writeFile(
          path,
          JSON.stringify({
            name: `w${i}`,
            default_queue: deploy.queue,
            tasks: [
              { name: 'a', kwargs: { cmd: 'sleep 1' } },
              // Fails its first attempt: a failure applied twice would burn a second retry.
              { name: 'flaky', depends_on: ['a'], num_retries: 2, kwargs: { cmd: '[ "$JOBQ_WORKFLOW_ATTEMPT" -ge 2 ]' } },
              { name: 'b', depends_on: ['flaky'], kwargs: { cmd: 'true' } },
            ],
          }),
        );
        files.push(path);
      }
      // Three coordinators race to create the manifest: all of them read one of 8 shards. The
      // worker (which reads the manifest at its start) and the submit go as soon as it exists.
      for (const id of ['c1', 'c2', 'c3']) coordinator(id);
      await Promise.race(['c1', 'c2', 'c3'].map((id) => procs[id]!.waitFor(/Coordinator running as member \S+ of 8 shards/, 90_000)));
      procs.worker = processes.start(workerArgs(deploy.queue, ['--num-workers', '8']), { env: deploy.env() });
      const submitting = runCli(['workflow', 'submit', ...files], { env: deploy.env() });
      for (const id of ['c1', 'c2', 'c3']) await procs[id]!.waitFor(/Coordinator running as member \S+ of 8 shards/, 90_000);
      const first = await balanced('3/3/2 over c1, c2, c3', ['c1', 'c2', 'c3'], [3, 3, 2], 2 * (LEASE_MS + INTERVAL_MS) + 30_000);
      const heaviest = Object.entries(holdings(first)).find(([, n]) => n === 3)![0];
      const submitted = await submitting;
      expect({ code: submitted.code, stderr: submitted.stderr }).toEqual({ code: 0, stderr: expect.any(String) as unknown });
      const ids = submitted.stdout.trim().split('\n');
      expect(ids).toHaveLength(60);

      // kill -9 a member holding 3: its leases run out, and its member record stops counting a lease
      // duration after its last heartbeat (by the store's clock); the two left share the 8 shards.
      await crash(procs[heaviest]!);
      const left = ['c1', 'c2', 'c3'].filter((id) => id !== heaviest);
      await balanced(`4/4 over ${left.join(', ')} after ${heaviest} was killed`, left, [4, 4], 2 * (LEASE_MS + INTERVAL_MS));

      // The killed one comes back (same id) and a fourth joins: 2/2/2/2.
      coordinator(heaviest);
      coordinator('c4');
      for (const id of [heaviest, 'c4']) await procs[id]!.waitFor(/Coordinator running as member/, 90_000);
      await balanced('2/2/2/2 over four members', ['c1', 'c2', 'c3', 'c4'], [2, 2, 2, 2], 2 * (LEASE_MS + INTERVAL_MS) + 8 * INTERVAL_MS);

      // SIGTERM one: it releases its shards and leaves at once; the three left take them.
      const stopped = await stopProcess(procs.c4!);
      expect(stopped.code).toBe(0);
      expect(stopped.stderr).toMatch(/Coordinator stopped — \d+ completions, \d+ tasks pushed, \d+ batches \(member c4; shards run: /);
      await balanced('3/3/2 after c4 stopped', ['c1', 'c2', 'c3'], [3, 3, 2], 2 * (LEASE_MS + INTERVAL_MS));

      // Every workflow completes, each (task, attempt) applied once: a at 1, flaky at 2 (one failure), b at 1.
      const store = await deploy.store();
      const runtimes = await eventually(
        'all 60 workflows to complete',
        async () => {
          const loaded = await Promise.all(ids.map(async (id) => (await store.load(id))?.runtime ?? null));
          return loaded.every((r) => r !== null && r.status === 'completed') ? loaded : undefined;
        },
        90_000,
        logs,
      );
      for (const runtime of runtimes) {
        expect(summary(runtime!)).toBe('completed; a=completed@1 flaky=completed@2 b=completed@1');
      }
    } finally {
      await Promise.all(Object.values(procs).flatMap((p) => (p === undefined ? [] : [stopProcess(p, 5_000)])));
      await dir.remove();
    }
  }, 180_000);
});
