import type { TokenCredential } from '@azure/core-auth';
import { describeConnectionString } from '@jobq/azure-pipeline';

let shared: TokenCredential | null = null;

/**
 * The process's one `DefaultAzureCredential`, made on first use and handed to every adapter that
 * signs with a token (storage blob, queue and table clients, Service Bus), so they share one token
 * cache: one token request per scope, however many clients (deploy/README.md#identities).
 */
export function azureCredential(): TokenCredential {
  if (shared === null) {
    // Loaded on first use: commands that never reach Azure with a token do not load it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { DefaultAzureCredential } = require('@azure/identity') as typeof import('@azure/identity');
    shared = new DefaultAzureCredential();
  }
  return shared;
}

/** A storage connection of the CLI (see `storageAccess`), with a token credential when it has one. */
export type StorageConnectionWithCredential = ({ connectionString: string } | { accountName: string }) & { credential?: TokenCredential };

/**
 * A storage connection with the process's credential when it signs with a token (an account name,
 * or a connection string with endpoints but no key or SAS); else the connection unchanged.
 */
export function withStorageCredential(connection: StorageConnectionWithCredential): StorageConnectionWithCredential {
  if (connection.credential !== undefined) return connection;
  if ('connectionString' in connection && describeConnectionString(connection.connectionString).credential !== 'none') return connection;
  return { ...connection, credential: azureCredential() };
}

/** A Service Bus connection with the process's credential when it is a namespace (no connection string). */
export function withServiceBusCredential(
  connection: { connectionString: string } | { namespace: string; credential?: TokenCredential },
): { connectionString: string } | { namespace: string; credential?: TokenCredential } {
  if ('namespace' in connection && connection.credential === undefined) return { ...connection, credential: azureCredential() };
  return connection;
}

/**
 * The workload identity settings of `DefaultAzureCredential` (set by the AKS workload identity
 * webhook in a pod whose service account is federated): which are set, by name; never a value.
 */
export const WORKLOAD_IDENTITY_VARIABLES = [
  'AZURE_CLIENT_ID',
  'AZURE_TENANT_ID',
  'AZURE_FEDERATED_TOKEN_FILE',
  'AZURE_AUTHORITY_HOST',
] as const;

export interface WorkloadIdentityStatus {
  /** All of AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_FEDERATED_TOKEN_FILE are set (AZURE_AUTHORITY_HOST is optional). */
  configured: boolean;
  set: string[];
  missing: string[];
}

export function workloadIdentityStatus(env: NodeJS.ProcessEnv = process.env): WorkloadIdentityStatus {
  const isSet = (name: string) => (env[name] ?? '').trim() !== '';
  const set = WORKLOAD_IDENTITY_VARIABLES.filter(isSet);
  const missing = WORKLOAD_IDENTITY_VARIABLES.filter((name) => name !== 'AZURE_AUTHORITY_HOST' && !isSet(name));
  return { configured: missing.length === 0, set: [...set], missing };
}

/** One line for doctor, e.g. `workload identity: set (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE)`. */
export function workloadIdentityLine(status: WorkloadIdentityStatus): string {
  if (status.configured) return `workload identity: set (${status.set.join(', ')})`;
  if (status.set.length === 0)
    return 'workload identity: not set (no AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE); DefaultAzureCredential tries its other sources';
  return `workload identity: incomplete (set: ${status.set.join(', ')}; missing: ${status.missing.join(', ')})`;
}
