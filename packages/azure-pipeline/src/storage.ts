import type { Pipeline } from '@azure/core-rest-pipeline';

/**
 * The HTTP pipeline under a Storage SDK client (`BlobServiceClient`, `ContainerClient`,
 * `QueueServiceClient`, …; `@azure/storage-blob` 12.x, `@azure/storage-queue` 12.x), or undefined
 * when the client does not have one where these SDK versions keep it. The SDK builds that pipeline
 * from the client's `newPipeline(…)` object on first use and shares it with every client made from
 * it (`getContainerClient`, `getBlockBlobClient`, `getQueueClient`), so a change made here applies
 * to them all. The SDK exposes it only through the client's protected `storageClientContext`; the
 * tests of this package check that it is still there.
 */
export function storageCorePipeline(client: object): Pipeline | undefined {
  const context = (client as { storageClientContext?: { pipeline?: Partial<Pipeline> } }).storageClientContext;
  const pipeline = context?.pipeline;
  if (pipeline === undefined || typeof pipeline.getOrderedPolicies !== 'function' || typeof pipeline.addPolicy !== 'function')
    return undefined;
  return pipeline as Pipeline;
}
