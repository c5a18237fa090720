import type { TokenCredential } from '@azure/core-auth';
import { TableClient, AzureNamedKeyCredential, AzureSASCredential } from '@azure/data-tables';
import { DefaultAzureCredential } from '@azure/identity';
import { azureSdkTracing, connectionStringFields, gateSdkTracing, storageCorePipeline } from '@jobq/azure-pipeline';
import {
  AnonymousCredential,
  BlobServiceClient,
  StorageSharedKeyCredential,
  newPipeline,
  type ContainerClient,
  type RequestPolicyFactory,
} from '@azure/storage-blob';
import { JobqError } from '@jobq/ports';

/**
 * How to reach a storage account: a connection string (`UseDevelopmentStorage=true` and Azurite
 * strings included) with an account key, a SAS (`BlobEndpoint=…;TableEndpoint=…;SharedAccessSignature=…`)
 * or only endpoints (then a token credential: `credential`, or `DefaultAzureCredential`); an
 * account name with a token credential (`DefaultAzureCredential` when none is given); or the blob
 * and table service URLs with a token credential (as `@jobq/queue-storage`'s `queueServiceUrl`).
 * Without `credential` every client of the process shares one `DefaultAzureCredential`.
 */
export type StorageAccountConnection =
  | { connectionString: string; credential?: TokenCredential }
  | { accountName: string; credential?: TokenCredential }
  | { blobServiceUrl: string; tableServiceUrl: string; credential: TokenCredential };

/** Settings shared by every client the store makes. */
export interface ClientSettings {
  /** Limit of each SDK try, and of each call as a whole (our abort signal). */
  operationTimeoutInMs: number;
  /** Extra blob pipeline policies (e.g. a transaction counter); the SDK runs them before its retries. */
  blobPolicies?: readonly RequestPolicyFactory[];
}

interface Account {
  blobUrl: string;
  tableUrl: string;
  accountName: string | undefined;
  accountKey: string | undefined;
  sas: string | undefined;
  credential: TokenCredential | undefined;
}

let defaultCredential: TokenCredential | undefined;

/** The one `DefaultAzureCredential` of the clients given none (one token cache). */
function sharedDefaultCredential(): TokenCredential {
  defaultCredential ??= new DefaultAzureCredential();
  return defaultCredential;
}

/** An `https://` (or `http://`, for an emulator) service URL without a trailing slash, or a config error naming `what`. */
function serviceUrl(url: string, what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new JobqError('invalid-config', `${what} is not a URL: "${url}"`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw new JobqError('invalid-config', `${what} must be an http(s) URL, got "${parsed.protocol}"`);
  if (parsed.search !== '') throw new JobqError('invalid-config', `${what} must not carry a query (a SAS goes in a connection string)`);
  return url.replace(/\/+$/, '');
}

/** Reads a connection string's endpoints and credential. Errors never quote the string. */
function parseAccount(connection: StorageAccountConnection): Account {
  if ('blobServiceUrl' in connection) {
    return {
      blobUrl: serviceUrl(connection.blobServiceUrl, 'blobServiceUrl'),
      tableUrl: serviceUrl(connection.tableServiceUrl, 'tableServiceUrl'),
      accountName: undefined,
      accountKey: undefined,
      sas: undefined,
      credential: connection.credential,
    };
  }
  if ('accountName' in connection) {
    if (!/^[a-z0-9]{3,24}$/.test(connection.accountName)) {
      throw new JobqError(
        'invalid-config',
        `"${connection.accountName}" is not a storage account name (3–24 lowercase letters and digits)`,
      );
    }
    return {
      blobUrl: `https://${connection.accountName}.blob.core.windows.net`,
      tableUrl: `https://${connection.accountName}.table.core.windows.net`,
      accountName: connection.accountName,
      accountKey: undefined,
      sas: undefined,
      credential: connection.credential ?? sharedDefaultCredential(),
    };
  }
  const fields = connectionStringFields(connection.connectionString);
  const accountName = fields.get('accountname');
  const protocol = fields.get('defaultendpointsprotocol') ?? 'https';
  const suffix = fields.get('endpointsuffix') ?? 'core.windows.net';
  const endpoint = (service: 'blob' | 'table') =>
    fields.get(`${service}endpoint`) ?? (accountName ? `${protocol}://${accountName}.${service}.${suffix}` : undefined);
  const blobUrl = endpoint('blob');
  const tableUrl = endpoint('table');
  if (!blobUrl || !tableUrl)
    throw new JobqError('invalid-config', 'the storage connection string names no account and no blob/table endpoints');
  const accountKey = fields.get('accountkey');
  const sas = fields.get('sharedaccesssignature');
  if (accountKey && !accountName)
    throw new JobqError('invalid-config', 'the storage connection string has an AccountKey but no AccountName');
  // Endpoints without a key or a SAS: the endpoints with a token credential.
  const credential = accountKey || sas ? undefined : (connection.credential ?? sharedDefaultCredential());
  return { blobUrl: blobUrl.replace(/\/+$/, ''), tableUrl: tableUrl.replace(/\/+$/, ''), accountName, accountKey, sas, credential };
}

/** The blob and table clients of one storage account. */
export interface AccountClients {
  blobService: BlobServiceClient;
  table(name: string): TableClient;
  container(name: string): ContainerClient;
}

/**
 * Clients for an account, with short SDK retries (3 tries, 0.2–2 s apart, each try bounded by the
 * operation timeout) so a dead endpoint fails fast as `unavailable` instead of hanging. The SDK's
 * per-request tracing runs only while an OpenTelemetry tracer provider is registered, or as
 * `JOBQ_AZURE_SDK_TRACING` says (see `@jobq/azure-pipeline`).
 */
export function accountClients(connection: StorageAccountConnection, settings: ClientSettings): AccountClients {
  const account = parseAccount(connection);
  const tracing = azureSdkTracing();
  const retryOptions = { maxTries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2_000, tryTimeoutInMs: settings.operationTimeoutInMs };
  let blobUrl = account.blobUrl;
  let pipeline;
  if (account.credential) pipeline = newPipeline(account.credential, { retryOptions });
  else if (account.accountKey && account.accountName)
    pipeline = newPipeline(new StorageSharedKeyCredential(account.accountName, account.accountKey), { retryOptions });
  else {
    blobUrl = `${blobUrl}?${(account.sas ?? '').replace(/^\?/, '')}`;
    pipeline = newPipeline(new AnonymousCredential(), { retryOptions });
  }
  if (settings.blobPolicies) pipeline.factories.push(...settings.blobPolicies);
  const blobService = new BlobServiceClient(blobUrl, pipeline);
  // One HTTP pipeline serves this service client and every container and blob client made from it.
  const blobPipeline = storageCorePipeline(blobService);
  if (blobPipeline) gateSdkTracing(blobPipeline, tracing);
  const insecure = account.tableUrl.startsWith('http://');
  const tableOptions = {
    allowInsecureConnection: insecure,
    retryOptions: { maxRetries: 2, retryDelayInMs: 200, maxRetryDelayInMs: 2_000 },
  };
  const tableClient = (name: string): TableClient => {
    if (account.credential) return new TableClient(account.tableUrl, name, account.credential, tableOptions);
    if (account.accountKey && account.accountName) {
      return new TableClient(account.tableUrl, name, new AzureNamedKeyCredential(account.accountName, account.accountKey), tableOptions);
    }
    return new TableClient(account.tableUrl, name, new AzureSASCredential(account.sas ?? ''), tableOptions);
  };
  const table = (name: string): TableClient => {
    const client = tableClient(name);
    gateSdkTracing(client.pipeline, tracing);
    return client;
  };
  return { blobService, table, container: (name) => blobService.getContainerClient(name) };
}
