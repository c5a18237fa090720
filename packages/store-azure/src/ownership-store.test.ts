import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { SHARD_MANIFEST_BLOB } from '@jobq/ports';
import { describeOwnershipStoreContract } from '@jobq/ports/testing';
import { randomPrefix } from './test-helpers/contract-fixtures';
import { storeNames } from './names';
import { openOwnershipStore, type AzureOwnershipStore } from './ownership-store';
import { openWorkflowStore } from './workflow-store';

let azurite: LocalStorage;

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await azurite.stop();
});

/** A store of `prefix` whose leases renew every 250 ms, so a broken lease is noticed within the test. */
function open(prefix: string): Promise<AzureOwnershipStore> {
  return openOwnershipStore({
    connection: { connectionString: azurite.connectionString },
    prefix,
    operationTimeoutInMs: 10_000,
    leaseDurationInMs: 15_000,
    renewIntervalInMs: 250,
  });
}

// Lease expiry is left to the in-memory adapter's run of the suite: a blob lease lasts at least
// 15 s, too long for the suite; a broken lease stands for it here.
describeOwnershipStoreContract('Azure Blob Storage (Azurite)', async () => {
  const prefix = randomPrefix();
  const opened: AzureOwnershipStore[] = [await open(prefix)];
  const container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(storeNames(prefix).workflowsContainer);
  return {
    store: opened[0]!,
    another: async () => {
      const store = await open(prefix);
      opened.push(store);
      return store;
    },
    writeManifestText: async (text: string) => {
      await container.getBlockBlobClient(SHARD_MANIFEST_BLOB).upload(text, Buffer.byteLength(text));
    },
    dispose: async () => {
      for (const store of opened) for (let k = 0; k < 16; k++) await store.release(k);
      await container.deleteIfExists();
    },
  };
});

describe('AzureOwnershipStore specifics', () => {
  it('fences a coordinator of a deployment without shards: shard 0 is its lease, and its lease is shard 0', async () => {
    const prefix = randomPrefix();
    const store = await open(prefix);
    const old = await openWorkflowStore({ connection: { connectionString: azurite.connectionString }, prefix, leaseDurationInMs: 15_000, renewIntervalInMs: 250 });
    const lease = await old.acquireLease();
    expect(await store.claim(0, 'member-a')).toBeNull();
    expect((await store.list()).shards[0]).toMatchObject({ leased: true, epoch: 0 });
    expect(await store.growManifest(4, '').catch((error: Error) => error.message)).toMatch(/shard 0's lease is held/);
    await lease.release();
    const claim = await store.claim(0, 'member-a');
    expect(claim).toMatchObject({ epoch: 1, owner: 'member-a' });
    await expect(old.acquireLease()).rejects.toMatchObject({ code: 'lease-held' });
    await store.release(0);
    await old.deleteStorage();
  });
});
