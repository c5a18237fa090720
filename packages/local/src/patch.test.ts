import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { QueueServiceClient, type QueueClient } from '@azure/storage-queue';
import { startAzurite, type LocalStorage } from './index';

/**
 * patches/azurite@3.35.0.patch (pnpm patchedDependencies): without it LokiJS rebuilds its binary
 * indexes on every queue delete and GC pass, and Azurite stalls after a few thousand messages; and
 * every table row write walks its whole partition (its look-up) or its whole table (a merge's index
 * update).
 */
describe('the Azurite queue patch', () => {
  const source = (file: string): string => readFileSync(require.resolve(`azurite/dist/src/${file}`), 'utf8');

  it('is applied to the installed azurite', () => {
    const extents = source('common/persistence/LokiExtentMetadataStore.js');
    expect(extents).not.toContain('findAndRemove');
    expect(extents).toMatch(/const doc = coll\.findOne\(\{ id: extentId \}\);\s+if \(doc\) \{\s+coll\.remove\(doc\);/);

    const queue = source('queue/persistence/LokiQueueMetadataStore.js');
    // No message query may lead with accountName (shared by every message: the index is useless).
    expect(queue).not.toMatch(/(findOne\(|findAndRemove\(|query = )\{\s*accountName: (account|message\.accountName),\s*queueName/);
    expect(queue.match(/query = \{\s*queueName: queue,\s*accountName: account/g)).toHaveLength(4);
    expect(queue).toMatch(/findOne\(\{\s*messageId,\s*queueName: queue,/);
    expect(queue).toMatch(/findOne\(\{\s*messageId: message\.messageId,\s*queueName: message\.queueName,/);
    expect(queue).toMatch(/if \(docs\.length > 0\) \{\s+coll\.remove\(docs\);/);

    // Row look-ups lead with RowKey: led by PartitionKey, LokiJS walked every row of the partition
    // on each insert, merge or delete (a 100k-task workflow's rows took quadratic time).
    const tables = source('table/persistence/LokiTableMetadataStore.js');
    expect(tables).not.toMatch(/findOne\(\{\s*PartitionKey:/);
    expect(tables.match(/findOne\(\{\s*RowKey: [^,]+,\s*PartitionKey: /g)).toHaveLength(6);
    // A merge keeps the entity's index entries (its keys do not change) instead of LokiJS's linear
    // scan for them: counted in table-patch.test.ts.
    expect(tables).toMatch(
      /tableEntityCollection\.adaptiveBinaryIndexUpdate = \(\) => undefined;\s+try \{\s+tableEntityCollection\.update\(mergedEntity\);\s+\}\s+finally \{\s+delete tableEntityCollection\.adaptiveBinaryIndexUpdate;/,
    );
  });

  describe('under load (in-process Azurite)', () => {
    const TOTAL = 3_000;
    const SENDERS = 16;
    const RECEIVERS = 4;
    let storage: LocalStorage;
    let queue: QueueClient;

    beforeAll(async () => {
      storage = await startAzurite();
      queue = QueueServiceClient.fromConnectionString(storage.connectionString).getQueueClient('load');
      await queue.create();
    });

    afterAll(async () => {
      await storage.stop();
    });

    it(`moves ${TOTAL} messages through one queue: send, receive 32 at a time, delete`, async () => {
      let next = 0;
      await Promise.all(
        Array.from({ length: SENDERS }, async () => {
          while (next < TOTAL) {
            const n = next++;
            await queue.sendMessage(JSON.stringify({ n, pad: 'x'.repeat(150) }));
          }
        }),
      );
      expect((await queue.getProperties()).approximateMessagesCount).toBe(TOTAL);

      const seen = new Set<number>();
      let deliveries = 0;
      await Promise.all(
        Array.from({ length: RECEIVERS }, async () => {
          let idle = 0;
          while (seen.size < TOTAL && idle < 50) {
            const { receivedMessageItems } = await queue.receiveMessages({ numberOfMessages: 32, visibilityTimeout: 300 });
            if (receivedMessageItems.length === 0) {
              idle++;
              await new Promise((resolve) => setTimeout(resolve, 20));
              continue;
            }
            idle = 0;
            deliveries += receivedMessageItems.length;
            for (const message of receivedMessageItems) {
              seen.add((JSON.parse(message.messageText) as { n: number }).n);
            }
            await Promise.all(receivedMessageItems.map((m) => queue.deleteMessage(m.messageId, m.popReceipt)));
          }
        }),
      );
      expect(seen.size).toBe(TOTAL);
      expect(deliveries).toBe(TOTAL);
      expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
    }, 300_000);
  });
});
