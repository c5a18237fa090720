import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { BlobServiceClient, type RequestPolicy, type RequestPolicyFactory, type WebResource } from '@azure/storage-blob';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { isJobqError, SHARD_MANIFEST_BLOB } from '@jobq/ports';
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
function open(prefix: string, blobPolicies?: RequestPolicyFactory[]): Promise<AzureOwnershipStore> {
  return openOwnershipStore({
    connection: { connectionString: azurite.connectionString },
    prefix,
    operationTimeoutInMs: 10_000,
    leaseDurationInMs: 15_000,
    renewIntervalInMs: 250,
    ...(blobPolicies ? { blobPolicies } : {}),
  });
}

/** Counts lease renewals sent and answered (the class name places it below the retry policy: every try is seen). */
class InjectorPolicyFactory implements RequestPolicyFactory {
  sent = 0;
  answered = 0;
  /** When the last renewal was sent: the lease it renewed runs from no earlier than that. */
  lastSentAt = 0;
  create(next: RequestPolicy): RequestPolicy {
    return {
      sendRequest: async (request: WebResource) => {
        const renewal = request.headers.get('x-ms-lease-action') === 'renew';
        if (renewal) {
          this.sent++;
          this.lastSentAt = Date.now();
        }
        const response = await next.sendRequest(request);
        if (renewal && response.status < 300) this.answered++;
        return response;
      },
    };
  }
}

// Lease expiry is left to the in-memory adapter's run of the suite: a blob lease lasts at least
// 15 s, too long for the suite; a broken lease stands for it here.
describeOwnershipStoreContract('Azure Blob Storage (Azurite)', async () => {
  const prefix = randomPrefix();
  const opened: AzureOwnershipStore[] = [await open(prefix)];
  const container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(
    storeNames(prefix).workflowsContainer,
  );
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
    const old = await openWorkflowStore({
      connection: { connectionString: azurite.connectionString },
      prefix,
      leaseDurationInMs: 15_000,
      renewIntervalInMs: 250,
    });
    const lease = await old.acquireLease();
    expect(await store.claim(0, 'member-a')).toBeNull();
    expect((await store.list()).shards[0]).toMatchObject({ leased: true, epoch: 0 });
    // It records no owner, so no claim time either: doctor tells it from a sharded owner by that.
    expect((await store.list({ claimTimes: true })).shards[0]).toEqual({ index: 0, leased: true, owner: null, epoch: 0, claimedAt: null });
    expect(await store.growManifest(4, '').catch((error: Error) => error.message)).toMatch(/shard 0's lease is held/);
    await lease.release();
    const claim = await store.claim(0, 'member-a');
    expect(claim).toMatchObject({ epoch: 1, owner: 'member-a' });
    await expect(old.acquireLease()).rejects.toMatchObject({ code: 'lease-held' });
    expect((await store.list({ claimTimes: true })).shards[0]).toMatchObject({
      leased: true,
      owner: 'member-a',
      claimedAt: expect.any(Date),
    });
    await store.release(0);
    await old.deleteStorage();
  });

  it('stops renewing a claim on stopRenewing: lost fires once the lease can have run out (the lease duration after the last renewal), and the lease is kept till then', async () => {
    const prefix = randomPrefix();
    const renewals = new InjectorPolicyFactory();
    const store = await open(prefix, [renewals]);
    const other = await open(prefix);
    const claim = await store.claim(0, 'member-a');
    expect(claim).not.toBeNull();
    // Renewals run every 250 ms of real time: stop right after one answered, none under way.
    while (renewals.answered === 0 || renewals.answered !== renewals.sent) await new Promise((resolve) => setTimeout(resolve, 5));
    // The wait for the expiry starts after stopRenewing, on the timers it finds: jest's fake ones from here.
    jest.useFakeTimers({ now: Date.now(), doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const stoppedAt = Date.now();
      claim!.stopRenewing();
      const sent = renewals.sent;
      // The last renewal left at lastSentAt and answered by stoppedAt: the lease runs out between their 15 s.
      await jest.advanceTimersByTimeAsync(renewals.lastSentAt + 15_000 - 1 - stoppedAt);
      expect(claim!.lease.lost.aborted).toBe(false);
      await jest.advanceTimersByTimeAsync(stoppedAt + 15_000 - Date.now());
      expect(claim!.lease.lost.aborted).toBe(true);
      expect(isJobqError(claim!.lease.lost.reason, 'lease-lost')).toBe(true);
      // 15 s of renewal ticks went by: none was sent.
      expect(renewals.sent).toBe(sent);
    } finally {
      jest.useRealTimers();
    }
    // Its real 15 s have not passed: the lease is still held (stopRenewing never gave it up).
    expect(await other.claim(0, 'member-b')).toBeNull();
    expect((await other.list()).shards[0]).toMatchObject({ leased: true, owner: 'member-a', epoch: 1 });
    await other.breakLease(0);
    await store.release(0); // lost already: harmless
    await BlobServiceClient.fromConnectionString(azurite.connectionString)
      .getContainerClient(storeNames(prefix).workflowsContainer)
      .deleteIfExists();
  });
});
