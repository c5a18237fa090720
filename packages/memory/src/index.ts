/**
 * `@jobq/memory`: in-memory adapters of jobq's ports — {@link MemoryWorkflowStore},
 * {@link MemoryOutputStore}, {@link MemoryTaskQueue}, {@link MemoryOwnershipStore} — for tests and simulations. They pass the same
 * contract suites (`@jobq/ports/testing`) as the Azure adapters and run on any `Clock` of
 * `@jobq/ports` (a `VirtualClock` in tests). Nothing survives the process.
 * @packageDocumentation
 */
export { MemoryTaskQueue, type MemoryQueueCounts, type MemoryTaskQueueOptions } from './task-queue';
export {
  MAX_ROW_ERROR_CHARS,
  MemoryWorkflowStore,
  type MemoryStateBlobs,
  type MemoryWorkflowStoreCalls,
  type MemoryWorkflowStoreOptions,
} from './workflow-store';
export { MemoryOutputStore, type MemoryOutputStoreOptions } from './output-store';
export { MemoryWorkerRegistry, type MemoryWorkerRegistryOptions } from './worker-registry';
export {
  MemoryOwnershipDeployment,
  MemoryOwnershipStore,
  type MemoryClaimRecord,
  type MemoryOwnershipCalls,
  type MemoryOwnershipDeploymentOptions,
  type MemoryOwnershipFaults,
  type MemoryOwnershipStoreOptions,
  type MemoryShardState,
  MemoryShardLease,
} from './ownership-store';
