import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { shardOf } from '@jobq/dag-core';
import { decodeCoordinatorMessage } from '@jobq/dag-core/wire';
import { configFromFlags } from './flags';
import { openDeployment, type Deployment } from './deployment';
import { shardCompletionQueueOf } from './shard-coordinator';
import { startTestStorage, uniquePrefix, type TestStorage } from './test-helpers/storage';

// The deployment's shard router on Azurite (docs/sharding.md#routing): the real manifest blob, read
// conditionally, and the shards' real completion queues.

let storage: TestStorage;
let deployment: Deployment;
const logs: string[] = [];

beforeAll(async () => {
  storage = await startTestStorage();
  deployment = await openDeployment(configFromFlags({}, storage.env(uniquePrefix('Route'))), { log: (line) => logs.push(line) });
});
afterAll(async () => {
  await deployment?.close();
  await storage?.stop();
});

/** An id in shard `k` of `n`. */
function idIn(k: number, n: number): string {
  for (let i = 0; ; i++) if (shardOf(`wf${i}`, n) === k) return `wf${i}`;
}

async function wakeupsIn(shard: number): Promise<string[]> {
  const peeked = await (await deployment.shardCompletions(shard)).peek(32);
  return peeked.map((m) => {
    const decoded = decodeCoordinatorMessage(m.body);
    return decoded.kind === 'wakeup' ? decoded.workflowId : decoded.kind;
  });
}

const flow = JSON.stringify({ name: 'one', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] });

describe('the deployment’s shard router (Azurite)', () => {
  it('routes wake-ups by the manifest blob: none → shard 0; 2 shards; grown to 4, seen at the next read', async () => {
    const before = idIn(1, 2);
    await deployment.client.submit({ text: flow, filename: 'flow.json' }, { id: before });
    expect(await wakeupsIn(0)).toEqual([before]);

    const ownership = await deployment.ownership();
    await ownership.ensureManifest(2);
    await deployment.route.refresh();
    expect(deployment.route.shardCount).toBe(2);
    const second = idIn(1, 4);
    await deployment.client.submit({ text: flow, filename: 'flow.json' }, { id: second });
    expect(await wakeupsIn(1)).toEqual([second]);
    expect((await deployment.route.queueFor(idIn(0, 2))).name).toBe(deployment.completions.name);

    await ownership.growManifest(4, (await ownership.readManifest())!.etag);
    // Read again now (the router reads every 60 s); a read that finds the same ETag changes nothing.
    await deployment.route.refresh();
    await deployment.route.refresh();
    expect(deployment.route.shardCount).toBe(4);
    const third = idIn(3, 4);
    await deployment.client.submit({ text: flow, filename: 'flow.json' }, { id: third });
    expect(await wakeupsIn(3)).toEqual([third]);
    expect((await deployment.route.queueFor(third)).name).toBe(deployment.shardCompletionsSpec(3).split('/').pop());
    expect(logs).toEqual(['routing completions by 2 shard(s) (was 1)', 'routing completions by 4 shard(s) (was 2)']);
  });

  it('a shard runner’s completion queue deleted under it is created again at its next receive, said once', async () => {
    const lines: string[] = [];
    const queue = shardCompletionQueueOf(deployment, 5, 30_000, (line) => lines.push(line));
    expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 })).toEqual([]);
    const opened = (await deployment.shardCompletions(5)) as unknown as { deleteQueue(): Promise<void> };
    await opened.deleteQueue();
    expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 })).toEqual([]);
    expect(lines).toEqual([`completion queue ${queue.name} is missing: creating it`]);
    await queue.send({ body: 'x' });
    expect(await queue.approximateMessageCount()).toBe(1);
  });
});
