import { createServer, type Server } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { AzureNamedKeyCredential, TableClient } from '@azure/data-tables';
import { BlobServiceClient, RestError } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import { AZURITE_ACCOUNT_KEY, AZURITE_ACCOUNT_NAME, startAzurite, type LocalStorage } from './index';
import { allRefused, portsOf, storageRoundTrip, uniqueName } from './test-helpers/round-trip';
import { canConnect, findFreePorts, LOOPBACK } from './net';

const started: LocalStorage[] = [];
async function start(...args: Parameters<typeof startAzurite>): Promise<LocalStorage> {
  const storage = await startAzurite(...args);
  started.push(storage);
  return storage;
}

afterAll(async () => {
  await Promise.all(started.map((storage) => storage.stop()));
});

describe('startAzurite (in-process)', () => {
  it('serves Blob, Queue and Table on random loopback ports to the real SDKs', async () => {
    const storage = await start();
    const [blobPort, queuePort, tablePort] = portsOf(storage);
    expect(storage.accountName).toBe(AZURITE_ACCOUNT_NAME);
    expect(storage.accountKey).toBe(AZURITE_ACCOUNT_KEY);
    expect(storage.blobEndpoint).toBe(`http://127.0.0.1:${blobPort}/devstoreaccount1`);
    expect(storage.queueEndpoint).toBe(`http://127.0.0.1:${queuePort}/devstoreaccount1`);
    expect(storage.tableEndpoint).toBe(`http://127.0.0.1:${tablePort}/devstoreaccount1`);
    expect(new Set([blobPort, queuePort, tablePort]).size).toBe(3);
    expect(storage.connectionString).toBe(
      `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_ACCOUNT_KEY};` +
        `BlobEndpoint=http://127.0.0.1:${blobPort}/devstoreaccount1;` +
        `QueueEndpoint=http://127.0.0.1:${queuePort}/devstoreaccount1;` +
        `TableEndpoint=http://127.0.0.1:${tablePort}/devstoreaccount1;`,
    );
    await storageRoundTrip(storage);
  });

  it('runs two instances at once on different ports, isolated from each other', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    expect(new Set([...portsOf(a), ...portsOf(b)]).size).toBe(6);
    const name = uniqueName('iso');
    const inA = BlobServiceClient.fromConnectionString(a.connectionString).getContainerClient(name);
    const inB = BlobServiceClient.fromConnectionString(b.connectionString).getContainerClient(name);
    await inA.create();
    expect(await inA.exists()).toBe(true);
    expect(await inB.exists()).toBe(false);
    await Promise.all([storageRoundTrip(a), storageRoundTrip(b)]);
  });

  it('listens on the ports it is given', async () => {
    const [blobPort, queuePort, tablePort] = await findFreePorts(3);
    const storage = await start({ blobPort: blobPort!, queuePort: queuePort!, tablePort: tablePort! });
    expect(portsOf(storage)).toEqual([blobPort, queuePort, tablePort]);
    await storageRoundTrip(storage);
  });

  it('stop() closes all three ports and may be called twice', async () => {
    const storage = await startAzurite();
    const ports = portsOf(storage);
    await storageRoundTrip(storage); // leaves keep-alive connections open
    expect(await Promise.all(ports.map((port) => canConnect(port)))).toEqual([true, true, true]);
    const first = storage.stop();
    const second = storage.stop();
    await Promise.all([first, second]);
    await storage.stop();
    expect(await allRefused(ports)).toBe(true);
  });

  it('enforces the extent memory limit per instance', async () => {
    const small = await start({ extentMemoryLimitMb: 1 });
    const container = BlobServiceClient.fromConnectionString(small.connectionString).getContainerClient('limit');
    await container.create();
    const big = Buffer.alloc(2 * 1024 * 1024, 1);
    const error = await container
      .getBlockBlobClient('big')
      .uploadData(big)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(RestError);
    expect((error as RestError).statusCode).toBe(409);
    expect((error as RestError).code).toBe('MemoryExtentStoreAtSizeLimit');
    await container.getBlockBlobClient('small').uploadData(Buffer.alloc(1024, 1));

    // Another instance has its own store and cap.
    const other = await start();
    const otherContainer = BlobServiceClient.fromConnectionString(other.connectionString).getContainerClient('limit');
    await otherContainer.create();
    await otherContainer.getBlockBlobClient('big').uploadData(big);
  });

  it('fails cleanly when a port is taken, releasing the services that did start', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, LOOPBACK, resolve));
    const address = blocker.address();
    const taken = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const [queuePort, tablePort] = await findFreePorts(2);
      await expect(startAzurite({ blobPort: taken, queuePort: queuePort!, tablePort: tablePort! })).rejects.toThrow(/EADDRINUSE/);
      expect(await allRefused([queuePort!, tablePort!])).toBe(true);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('with location keeps blobs, queue messages and table rows on disk across a restart', async () => {
    const location = join(await mkdtemp(join(tmpdir(), 'jobq-local-test-')), 'data');
    let second: LocalStorage | undefined;
    try {
      const first = await startAzurite({ location });
      const container = BlobServiceClient.fromConnectionString(first.connectionString).getContainerClient('kept');
      await container.create();
      await container.getBlockBlobClient('a.json').upload('{"a":1}', 7);
      const queue = QueueServiceClient.fromConnectionString(first.connectionString).getQueueClient('kept');
      await queue.create();
      await queue.sendMessage('still here');
      const table = (storage: LocalStorage) =>
        new TableClient(storage.tableEndpoint, 'kept', new AzureNamedKeyCredential(storage.accountName, storage.accountKey), {
          allowInsecureConnection: true,
        });
      await table(first).createTable();
      await table(first).createEntity({ partitionKey: 'p', rowKey: 'r', value: 42 });
      await first.stop();

      // Azurite's own layout (as `azurite --location`), and the message store keeps the binary
      // indices the patched queue look-ups lead with (patches/azurite@3.35.0.patch), updated
      // incrementally after a reload as before it.
      const db = JSON.parse(await readFile(join(location, '__azurite_db_queue__.json'), 'utf8')) as {
        collections: Array<{ name: string; adaptiveBinaryIndices?: boolean; binaryIndices: Record<string, unknown> }>;
      };
      const messages = db.collections.find((c) => c.name === '$MESSAGES_COLLECTION$');
      expect(messages?.adaptiveBinaryIndices).toBe(true);
      expect(Object.keys(messages?.binaryIndices ?? {})).toEqual(expect.arrayContaining(['queueName', 'messageId']));

      second = await startAzurite({ location });
      const blob = BlobServiceClient.fromConnectionString(second.connectionString).getContainerClient('kept').getBlockBlobClient('a.json');
      expect((await blob.downloadToBuffer()).toString('utf8')).toBe('{"a":1}');
      const received = await QueueServiceClient.fromConnectionString(second.connectionString).getQueueClient('kept').receiveMessages();
      expect(received.receivedMessageItems.map((m) => m.messageText)).toEqual(['still here']);
      expect(await table(second).getEntity('p', 'r')).toMatchObject({ value: 42 });
      await storageRoundTrip(second);
    } finally {
      await second?.stop();
      await rm(join(location, '..'), { recursive: true, force: true });
    }
  });

  it('rejects invalid options', async () => {
    await expect(startAzurite({ blobPort: 70_000 })).rejects.toThrow(RangeError);
    await expect(startAzurite({ extentMemoryLimitMb: 0 })).rejects.toThrow(RangeError);
  });
});
