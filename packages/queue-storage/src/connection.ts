import type { TokenCredential } from '@azure/core-auth';
import { DefaultAzureCredential } from '@azure/identity';
import {
  AnonymousCredential,
  QueueServiceClient,
  StorageSharedKeyCredential,
  newPipeline,
  type RequestPolicyFactory,
  type StorageRetryOptions,
} from '@azure/storage-queue';
import { azureSdkTracing, connectionStringFields, gateSdkTracing, storageCorePipeline } from '@jobq/azure-pipeline';
import { JobqError } from '@jobq/ports';

/**
 * How to reach a storage account: a connection string (Azurite's `UseDevelopmentStorage=true`
 * included) with an account key, a SAS (`QueueEndpoint=…;SharedAccessSignature=…`) or only
 * endpoints (then a token credential: `credential`, or `DefaultAzureCredential`); or an account
 * name with a token credential (`DefaultAzureCredential` when none is given); or the queue service
 * URL with a token credential. Without `credential` every client of the process shares one
 * `DefaultAzureCredential`.
 */
export type StorageConnection =
  | { connectionString: string; credential?: TokenCredential }
  | { accountName: string; credential?: TokenCredential }
  | { queueServiceUrl: string; credential: TokenCredential };

let defaultCredential: TokenCredential | undefined;

/** The one `DefaultAzureCredential` of the clients given none (one token cache). */
function sharedDefaultCredential(): TokenCredential {
  defaultCredential ??= new DefaultAzureCredential();
  return defaultCredential;
}

/** Options of the HTTP pipeline under a queue service client. */
export interface PipelineSettings {
  retryOptions?: StorageRetryOptions;
  /** Extra request policies, run once per SDK call, before the SDK's retries (e.g. a call counter). */
  policies?: readonly RequestPolicyFactory[];
}

/** What {@link parseConnectionString} reads from a connection string. */
export interface ParsedConnectionString {
  queueUrl: string;
  accountName: string | undefined;
  accountKey: string | undefined;
  sas: string | undefined;
}

/**
 * Reads the parts of a connection string the queue client needs; without an AccountKey or a
 * SharedAccessSignature the client uses a token credential on the endpoint. Errors never quote the string.
 */
export function parseConnectionString(connectionString: string): ParsedConnectionString {
  const fields = connectionStringFields(connectionString);
  const accountName = fields.get('accountname');
  const accountKey = fields.get('accountkey');
  const sas = fields.get('sharedaccesssignature');
  let queueUrl = fields.get('queueendpoint');
  if (!queueUrl && accountName) {
    const protocol = fields.get('defaultendpointsprotocol') ?? 'https';
    const suffix = fields.get('endpointsuffix') ?? 'core.windows.net';
    queueUrl = `${protocol}://${accountName}.queue.${suffix}`;
  }
  if (!queueUrl) {
    throw new JobqError('invalid-config', 'the storage connection string has neither QueueEndpoint nor AccountName');
  }
  if (accountKey && !accountName)
    throw new JobqError('invalid-config', 'the storage connection string has an AccountKey but no AccountName');
  return { queueUrl: queueUrl.replace(/\/+$/, ''), accountName, accountKey, sas };
}

/** The account's queue endpoint for an account name. */
export function queueServiceUrlFor(accountName: string): string {
  if (!/^[a-z0-9]{3,24}$/.test(accountName)) {
    throw new JobqError('invalid-config', `"${accountName}" is not a storage account name (3–24 lowercase letters and digits)`);
  }
  return `https://${accountName}.queue.core.windows.net`;
}

/**
 * A queue service client for a connection, with our retry settings and extra policies. The SDK's
 * per-request tracing runs only while an OpenTelemetry tracer provider is registered, or as
 * `JOBQ_AZURE_SDK_TRACING` says (see `@jobq/azure-pipeline`).
 */
export function createQueueServiceClient(connection: StorageConnection, settings: PipelineSettings = {}): QueueServiceClient {
  const tracing = azureSdkTracing();
  const options = settings.retryOptions ? { retryOptions: settings.retryOptions } : {};
  let url: string;
  let pipeline;
  if ('connectionString' in connection) {
    const parsed = parseConnectionString(connection.connectionString);
    if (parsed.accountKey && parsed.accountName) {
      url = parsed.queueUrl;
      pipeline = newPipeline(new StorageSharedKeyCredential(parsed.accountName, parsed.accountKey), options);
    } else if (!parsed.sas) {
      url = parsed.queueUrl;
      pipeline = newPipeline(connection.credential ?? sharedDefaultCredential(), options);
    } else {
      url = `${parsed.queueUrl}?${(parsed.sas ?? '').replace(/^\?/, '')}`;
      pipeline = newPipeline(new AnonymousCredential(), options);
    }
  } else if ('accountName' in connection) {
    url = queueServiceUrlFor(connection.accountName);
    pipeline = newPipeline(connection.credential ?? sharedDefaultCredential(), options);
  } else {
    url = connection.queueServiceUrl;
    pipeline = newPipeline(connection.credential, options);
  }
  // The SDK runs custom policies before its retry policy: they see each call once, not each try.
  if (settings.policies) pipeline.factories.push(...settings.policies);
  const client = new QueueServiceClient(url, pipeline);
  // One HTTP pipeline serves this service client and every queue client made from it.
  const corePipeline = storageCorePipeline(client);
  if (corePipeline) gateSdkTracing(corePipeline, tracing);
  return client;
}
