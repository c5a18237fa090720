/**
 * `@jobq/azure-pipeline`: what jobq changes in the HTTP pipelines of the Azure SDK clients it opens
 * (see this package's README).
 */
export { AZURE_SDK_TRACING_VARIABLE, azureSdkTracing, gateSdkTracing, tracerProviderRegistered, type AzureSdkTracing } from './tracing';
export { storageCorePipeline } from './storage';
