/**
 * `@jobq/local`: the embedded jobq stack for tests and local runs. Azure Storage (Blob, Queue and
 * Table) comes from Azurite 3.35.0, patched so queues stay fast under load, either in this process
 * ({@link startAzurite}) or in a child process ({@link startAzuriteProcess}), on 127.0.0.1 and
 * random ports.
 *
 * @packageDocumentation
 */
export {
  AZURITE_ACCOUNT_KEY,
  AZURITE_ACCOUNT_NAME,
  DEFAULT_EXTENT_MEMORY_LIMIT_MB,
  DEFAULT_PROCESS_START_TIMEOUT_MS,
  startAzurite,
  startAzuriteProcess,
} from './azurite';
export type { AzuriteProcess, LocalStorage, StartAzuriteOptions, StartAzuriteProcessOptions } from './azurite';
export { startLocalStack } from './stack';
export type { LocalStack, StartLocalStackOptions } from './stack';
export { adminPolicy, startServiceBus, startServiceBusProcess } from '@jobq/servicebus-emulator';
export type { ServiceBusEmulator, ServiceBusOptions, ServiceBusProcess, StartServiceBusProcessOptions } from '@jobq/servicebus-emulator';
