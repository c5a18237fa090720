/**
 * `@jobq/store-azure`: jobq's workflow state on Azure Storage — runtimes (a head, a definition
 * written once, snapshots and append-blob logs: docs/runtime-format.md), the index and task
 * tables, the coordinator lease and stats, shard ownership (docs/sharding.md), task outputs and stashed files.
 * @packageDocumentation
 */
export {
  AzureWorkflowStore,
  WORKFLOW_STORE_DEFAULTS,
  openWorkflowStore,
  type OpenWorkflowStoreOptions,
  type TablePipelinePolicy,
  type WorkflowStoreSettings,
} from './workflow-store';
export {
  AzureOutputStore,
  OUTPUT_STORE_DEFAULTS,
  openOutputStore,
  parseWorkflowBlobs,
  type OutputStoreOptions,
  type OutputsTargetOptions,
  type WorkflowBlobsSpec,
} from './output-store';
export { REQUESTS_PARTITION } from './request-rows';
export { TASK_LOG_BLOB_PREFIX, outputFolders, stateFolders } from './workflow-folders';
export { DefinitionCache, type DefinitionCacheLimits } from './definition-cache';
export { HEAD_FORMAT_VERSION } from './runtime-layout';
export { storeNames, encodeTaskRowKey, decodeTaskRowKey, indexPartition, runtimeBlobName, type StoreNames } from './names';
export { accountClients, type AccountClients, type ClientSettings, type StorageAccountConnection } from './clients';
// How to reach a storage account from connection strings and the environment (shared with @jobq/queue-storage).
export {
  CONNECTION_STRING_VARIABLES,
  chooseStorageConnection,
  connectionStringCandidates,
  describeConnectionString,
  storageConnectionFor,
  type ConnectionStringCandidate,
  type ConnectionStringCredential,
  type ConnectionStringInfo,
  type StorageConnectionChoice,
  type StorageConnectionSource,
} from '@jobq/azure-pipeline';
export { translateStoreError, type StoreErrorContext } from './errors';
export { AzureWorkerRegistry, openWorkerRegistry, type OpenWorkerRegistryOptions } from './worker-registry';
export type { LeaseSettings } from './lease';
export { AzureOwnershipStore, openOwnershipStore, type OpenOwnershipStoreOptions } from './ownership-store';
