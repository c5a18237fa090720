import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shardOf } from '@jobq/dag-core';
import { MemoryOwnershipDeployment, MemoryOwnershipStore } from '@jobq/memory';
import { ShardRouter, VirtualClock } from '@jobq/ports';
import { memoryOutputs, RecordingCompletions } from './test-helpers/memory-workflow';
import { workflowContext } from './test-helpers/workflow-fixtures';
import { WorkflowProcessor } from './workflow-processor';
import type { ShellResult } from './subprocess';

// A worker routes each completion to its workflow's shard's queue (docs/sharding.md#routing),
// following the manifest as its router reads it again.

let tempDir: string;

beforeAll(async () => {
  tempDir = await mkdtemp(join(tmpdir(), 'jobq-wf-routing-'));
});

afterAll(async () => {
  await rm(tempDir, { recursive: true, force: true });
});

const exited: ShellResult = { exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };

/** A workflow id in each shard of `n`, by index. */
function idsByShard(n: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.filter(Boolean).length < n; i++) {
    const id = `wf-${i}`;
    ids[shardOf(id, n)] ??= id;
  }
  return ids;
}

function setup() {
  const clock = new VirtualClock();
  const ownership = new MemoryOwnershipStore({ deployment: new MemoryOwnershipDeployment(clock) });
  const queues = Array.from({ length: 16 }, () => new RecordingCompletions());
  const router = new ShardRouter({ manifest: ownership, queueOf: (k) => queues[k]!, clock });
  const processor = new WorkflowProcessor({
    outputs: memoryOutputs(),
    completions: queues[0]!,
    completionRoute: router,
    isCancelled: () => Promise.resolve(false),
    env: { PATH: process.env.PATH, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Routing' },
    completionBackoff: { initialInMs: 1, maxInMs: 2 },
    cancelPollIntervalInMs: 24 * 3600_000,
    tempDir,
    clock,
    runCommand: () => Promise.resolve(exited),
  });
  const run = async (workflowId: string, taskName = 'a') => {
    const outcome = await processor.process(workflowContext({ workflowId, taskName, attemptNo: 1, kwargs: { cmd: 'true' } }));
    expect(outcome).toEqual({ kind: 'done' });
  };
  /** Where each queue's completions came from: shard → workflow ids. */
  const sentTo = () => new Map(queues.flatMap((q, k) => (q.sent.length > 0 ? [[k, q.sent.map((c) => c.workflowId)] as const] : [])));
  return { clock, ownership, router, processor, run, sentTo, queues };
}

describe('WorkflowProcessor with a completion route', () => {
  it('sends each completion to its shard’s queue; a grown manifest, read again 60 s on, routes later completions to the new shards', async () => {
    const s = setup();
    await s.ownership.ensureManifest(2);
    const ids = idsByShard(4);
    for (const id of ids) await s.run(id);
    // By 2 shards: shardOf(id, 4) mod 2.
    expect(s.sentTo()).toEqual(
      new Map([
        [0, [ids[0], ids[2]]],
        [1, [ids[1], ids[3]]],
      ]),
    );

    await s.ownership.growManifest(4, (await s.ownership.readManifest())!.etag);
    await s.clock.advance(60_000);
    for (const id of ids) await s.run(id, 'b');
    expect(s.queues[2]!.sent).toEqual([expect.objectContaining({ workflowId: ids[2], taskName: 'b', success: true })]);
    expect(s.queues[3]!.sent).toEqual([expect.objectContaining({ workflowId: ids[3], taskName: 'b', success: true })]);
    expect(s.queues[0]!.sent.map((c) => `${c.workflowId}/${c.taskName}`)).toEqual([`${ids[0]}/a`, `${ids[2]}/a`, `${ids[0]}/b`]);
    expect(s.queues[1]!.sent.map((c) => `${c.workflowId}/${c.taskName}`)).toEqual([`${ids[1]}/a`, `${ids[3]}/a`, `${ids[1]}/b`]);
  });

  it('without a manifest, every completion goes to `completions` (shard 0), as without a route', async () => {
    const s = setup();
    const ids = idsByShard(4);
    for (const id of ids) await s.run(id);
    expect(s.sentTo()).toEqual(new Map([[0, ids]]));
  });
});
