// The contract-suite fixtures of the store-azure adapters, for any storage account reached by a
// connection string: Azurite in the usual tests, a real account in real-azure.test.ts.
import { randomBytes } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import { BlobServiceClient, RestError, type RequestPolicy, type RequestPolicyFactory } from '@azure/storage-blob';
import { parseOutputRef, type StashMarker } from '@jobq/dag-core/wire';
import type { OutputStoreFixture, WorkflowStoreFixture } from '@jobq/ports/testing';
import { indexPartition } from '../names';
import { openOutputStore, type AzureOutputStore, type OutputStoreOptions } from '../output-store';
import { openWorkflowStore, type OpenWorkflowStoreOptions } from '../workflow-store';

/** A deployment prefix no other run uses (a letter, then letters and digits): its containers and tables are its own. */
export function randomPrefix(): string {
  return `T${randomBytes(8).toString('hex')}`;
}

type FaultState = { broken: boolean; failNext: number; loseAnswers: number; puts: number };

/**
 * Fails PUTs (uploads, container creation) while `broken` is set or `failNext` > 0, as an
 * unreachable service would, and counts PUTs. The class name matters: storage-blob places custom
 * policies before its retry policy unless their factory is called `InjectorPolicyFactory`, and the
 * fault should sit below the SDK's retries, where a real network error happens.
 */
class InjectorPolicyFactory implements RequestPolicyFactory {
  readonly state: FaultState = { broken: false, failNext: 0, loseAnswers: 0, puts: 0 };
  create(next: RequestPolicy): RequestPolicy {
    const state = this.state;
    return {
      sendRequest: (request) => {
        if (request.method === 'PUT') {
          state.puts++;
          if (state.broken || state.failNext > 0) {
            state.failNext = Math.max(0, state.failNext - 1);
            return Promise.reject(new RestError('injected fault: connect ECONNREFUSED', { code: 'ECONNREFUSED' }));
          }
          if (state.loseAnswers > 0) {
            // The request reaches the service; its answer is lost on the way back.
            state.loseAnswers--;
            return next
              .sendRequest(request)
              .then(() => Promise.reject(new RestError('injected fault: read ECONNRESET', { code: 'ECONNRESET' })));
          }
        }
        return next.sendRequest(request);
      },
    };
  }
}

export function faultInjector(): { policy: RequestPolicyFactory; state: FaultState } {
  const policy = new InjectorPolicyFactory();
  return { policy, state: policy.state };
}

/** Overwrites a blob's bytes (same size) behind the store's back, then puts the old Content-MD5 back. */
export async function corruptBlob(service: BlobServiceClient, container: string, path: string): Promise<void> {
  const blob = service.getContainerClient(container).getBlockBlobClient(path);
  const properties = await blob.getProperties();
  const old = await blob.downloadToBuffer();
  const damaged = Buffer.from(old);
  const index = Math.floor(damaged.length / 2);
  damaged[index] = damaged[index] === 0x61 ? 0x62 : 0x61;
  const contentType = properties.contentType !== undefined ? { blobContentType: properties.contentType } : {};
  await blob.uploadData(damaged, { blobHTTPHeaders: contentType });
  await blob.setHTTPHeaders({ ...(properties.contentMD5 !== undefined ? { blobContentMD5: properties.contentMD5 } : {}), ...contentType });
}

/** Deletes every container an output store may have written to. */
export async function deleteOutputContainers(service: BlobServiceClient, store: AzureOutputStore): Promise<void> {
  for (const name of new Set([store.outputsContainer, store.names.workflowsContainer, store.names.outputsContainer])) {
    await service.getContainerClient(name).deleteIfExists();
  }
}

/** A table client of the account (plain HTTP allowed for the emulator). */
function tableClient(connectionString: string, name: string): TableClient {
  return TableClient.fromConnectionString(connectionString, name, { allowInsecureConnection: /=\s*http:\/\//i.test(connectionString) });
}

/** A {@link WorkflowStoreFixture}: a store on a prefix of its own, removed (container and tables) by `dispose`. */
export async function workflowStoreFixture(
  connectionString: string,
  extra: Partial<OpenWorkflowStoreOptions> = {},
): Promise<WorkflowStoreFixture> {
  const store = await openWorkflowStore({
    connection: { connectionString },
    prefix: randomPrefix(),
    operationTimeoutInMs: 10_000,
    leaseDurationInMs: 15_000,
    renewIntervalInMs: 250,
    ...extra,
  });
  const index = tableClient(connectionString, store.names.indexTable);
  const blobs = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(store.names.workflowsContainer);
  return {
    store,
    simulateOrphan: async (workflowId) => {
      await index.deleteEntity(indexPartition(workflowId), workflowId);
    },
    damageRuntime: async (workflowId) => {
      const head = JSON.parse((await blobs.getBlobClient(`${workflowId}.json`).downloadToBuffer()).toString('utf8')) as {
        snapshot: string;
      };
      await blobs.getBlobClient(head.snapshot).delete();
    },
    writeNewerFormat: async (workflowId) => {
      // A newer format closes the current log (so older writers' appends fail), then replaces the head.
      const head = JSON.parse((await blobs.getBlobClient(`${workflowId}.json`).downloadToBuffer()).toString('utf8')) as { log: string };
      const closing = '{"closed_by":"a newer format"}\n';
      await blobs.getAppendBlobClient(head.log).appendBlock(closing, closing.length);
      const newer = JSON.stringify({ version: 99, workflow_id: workflowId });
      await blobs.getBlockBlobClient(`${workflowId}.json`).upload(newer, newer.length);
    },
    dispose: () => store.deleteStorage(),
  };
}

/** An {@link OutputStoreFixture} with the corrupt and upload-fault hooks; `dispose` removes its containers. */
export async function outputStoreFixture(connectionString: string, extra: Partial<OutputStoreOptions> = {}): Promise<OutputStoreFixture> {
  const service = BlobServiceClient.fromConnectionString(connectionString);
  const faults = faultInjector();
  const store = await openOutputStore({
    connection: { connectionString },
    prefix: randomPrefix(),
    operationTimeoutInMs: 5_000,
    uploadRetryDelayInMs: 50,
    blobPolicies: [faults.policy],
    ...extra,
  });
  return {
    store,
    corrupt: async (target: string | StashMarker) => {
      if (typeof target === 'string') {
        const ref = parseOutputRef(target);
        if (ref.kind !== 'blob') throw new Error(`not a blob ref: ${target}`);
        await corruptBlob(service, ref.container, ref.path);
      } else {
        await corruptBlob(service, store.outputsContainer, target.blobName);
      }
    },
    breakUploads: () => {
      faults.state.broken = true;
    },
    restoreUploads: () => {
      faults.state.broken = false;
    },
    dispose: () => deleteOutputContainers(service, store),
  };
}
