import { randomUUID } from 'node:crypto';
import { expect } from '@jest/globals';
import { AzureNamedKeyCredential, TableClient } from '@azure/data-tables';
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient, StorageSharedKeyCredential } from '@azure/storage-queue';
import type { LocalStorage } from '../azurite';
import { canConnect } from '../net';

/** A name valid for containers, queues (lowercase letters, digits, dashes) and tables (letters, digits). */
export function uniqueName(prefix: string): string {
  return `${prefix}${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

/** The three ports of a LocalStorage, read back from its endpoints. */
export function portsOf(storage: LocalStorage): number[] {
  return [storage.blobEndpoint, storage.queueEndpoint, storage.tableEndpoint].map((url) => Number(new URL(url).port));
}

/** Resolves true if every port refuses connections. */
export async function allRefused(ports: number[]): Promise<boolean> {
  const open = await Promise.all(ports.map((port) => canConnect(port)));
  return open.every((ok) => !ok);
}

/**
 * Exercises all three services with the real SDKs: blob via the connection string, queue via the
 * endpoint and a shared key, table via the endpoint and a named key.
 */
export async function storageRoundTrip(storage: LocalStorage): Promise<void> {
  const blobs = BlobServiceClient.fromConnectionString(storage.connectionString);
  const container = blobs.getContainerClient(uniqueName('c'));
  await container.create();
  const blob = container.getBlockBlobClient('dir/hello.json');
  const body = JSON.stringify({ hello: 'world' });
  await blob.upload(body, Buffer.byteLength(body), { blobHTTPHeaders: { blobContentType: 'application/json' } });
  expect((await blob.downloadToBuffer()).toString('utf8')).toBe(body);

  const queues = new QueueServiceClient(storage.queueEndpoint, new StorageSharedKeyCredential(storage.accountName, storage.accountKey));
  const queue = queues.getQueueClient(uniqueName('q'));
  await queue.create();
  await queue.sendMessage('ping');
  const received = await queue.receiveMessages({ numberOfMessages: 32, visibilityTimeout: 30 });
  expect(received.receivedMessageItems.map((m) => m.messageText)).toEqual(['ping']);
  const message = received.receivedMessageItems[0]!;
  await queue.deleteMessage(message.messageId, message.popReceipt);
  const props = await queue.getProperties();
  expect(props.approximateMessagesCount).toBe(0);

  const table = new TableClient(
    storage.tableEndpoint,
    uniqueName('t'),
    new AzureNamedKeyCredential(storage.accountName, storage.accountKey),
    { allowInsecureConnection: true },
  );
  await table.createTable();
  await table.upsertEntity({ partitionKey: 'p', rowKey: 'r', value: 42, name: 'answer' }, 'Merge');
  const entity = await table.getEntity<{ value: number; name: string }>('p', 'r');
  expect(entity.value).toBe(42);
  expect(entity.name).toBe('answer');
}
