import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createRuntime, validateWorkflow } from '@jobq/dag-core';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { describeWorkflowStoreShardContract } from '@jobq/ports/testing';
import { shardPartitions } from './shard-paging';
import { workflowStoreFixture } from './test-helpers/contract-fixtures';
import type { TablePipelinePolicy } from './workflow-store';

let azurite: LocalStorage;

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await azurite.stop();
});

describeWorkflowStoreShardContract('Azure Storage (Azurite)', () => workflowStoreFixture(azurite.connectionString));

/** Records the PartitionKey conditions of every table query (a GET with a `$filter`); null for a query without one. */
function partitionRecorder(): { policy: TablePipelinePolicy; queried: Array<string[] | null>; reset(): void } {
  const queried: Array<string[] | null> = [];
  const policy: TablePipelinePolicy = {
    name: 'test-partition-recorder',
    sendRequest: (request, next) => {
      const filter = request.method === 'GET' ? new URL(request.url).searchParams.get('$filter') : null;
      if (filter !== null) {
        const keys = [...filter.matchAll(/PartitionKey eq '([^']*)'/g)].map((m) => m[1]!);
        queried.push(keys.length === 0 ? null : keys);
      }
      return next(request);
    },
  };
  return { policy, queried, reset: () => void queried.splice(0) };
}

describe('shard listings on Azure', () => {
  it('names the index partitions of each shard', () => {
    expect(shardPartitions({ index: 0, count: 1 })).toEqual('0123456789abcdef'.split(''));
    expect(shardPartitions({ index: 3, count: 4 })).toEqual(['3', '7', 'b', 'f']);
    expect(shardPartitions({ index: 15, count: 16 })).toEqual(['f']);
  });

  it("queries only the shard's own index partitions, one partition per query", async () => {
    const recorder = partitionRecorder();
    const fixture = await workflowStoreFixture(azurite.connectionString, { tablePolicies: [recorder.policy] });
    const store = fixture.store;
    const result = validateWorkflow({ name: 'one', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] });
    if (!result.ok) throw new Error('bad definition');
    for (let i = 0; i < 6; i++)
      await store.create(createRuntime(result.value, { workflowId: `q-${i}`, now: new Date(Date.UTC(2026, 0, 1)).toISOString() }), 'h');
    const shard = { index: 3, count: 4 } as const;
    for (const filter of [
      { shard },
      { shard, recent: true },
      { shard, status: ['pending' as const] },
      { shard, savedStatus: ['running' as const], limit: 1 },
    ]) {
      recorder.reset();
      let token: string | undefined;
      do {
        const page = await store.listWorkflows({ ...filter, ...(token ? { continuationToken: token } : {}) });
        token = page.continuationToken ?? undefined;
      } while (token !== undefined);
      expect(recorder.queried.every((keys) => keys !== null && keys.length === 1)).toBe(true);
      expect([...new Set(recorder.queried.map((keys) => keys![0]))].sort()).toEqual(['3', '7', 'b', 'f']);
    }
    recorder.reset();
    await store.listRequests({ shard });
    await store.listReruns({ shard });
    expect(recorder.queried).toEqual([['requests'], ['reruns']]);
    await fixture.dispose();
  });
});
