/**
 * `@jobq/azure-pipeline`: what jobq changes in the HTTP pipelines of the Azure SDK clients it opens,
 * and how its storage adapters read connection strings and choose how to reach an account (see
 * this package's README).
 */
export { AZURE_SDK_TRACING_VARIABLE, azureSdkTracing, gateSdkTracing, tracerProviderRegistered, type AzureSdkTracing } from './tracing';
export { storageCorePipeline } from './storage';
export {
  CONNECTION_STRING_VARIABLES,
  chooseStorageConnection,
  connectionStringCandidates,
  connectionStringFields,
  describeConnectionString,
  storageConnectionFor,
  type ConnectionStringCandidate,
  type ConnectionStringCredential,
  type ConnectionStringInfo,
  type StorageConnectionChoice,
  type StorageConnectionSource,
} from './connection-string';
