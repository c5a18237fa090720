/**
 * `@jobq/queue-storage`: the jobq `TaskQueue` on Azure Storage Queues.
 * @packageDocumentation
 */
export {
  STORAGE_QUEUE_MAX_MESSAGE_BYTES,
  STORAGE_QUEUE_MAX_RECEIVE,
  StorageTaskQueue,
  type StorageTaskQueueSettings,
} from './storage-queue';
export { STORAGE_QUEUE_DEFAULTS, openStorageQueue, type OpenStorageQueueOptions } from './open';
export {
  createQueueServiceClient,
  parseConnectionString,
  queueServiceUrlFor,
  type ParsedConnectionString,
  type PipelineSettings,
  type StorageConnection,
} from './connection';
export { translateError, type ErrorContext } from './errors';
export { countingPolicy, type TransactionCounter } from './counting-policy';
