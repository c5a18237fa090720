import { DefaultAzureCredential, type TokenCredential } from '@azure/identity';
import { ServiceBusAdministrationClient, ServiceBusClient, type RetryOptions } from '@azure/service-bus';
import { JobqError } from '@jobq/ports';

/**
 * How to reach a Service Bus namespace: a connection string (a SAS key, or the local emulator's
 * `UseDevelopmentEmulator=true` string), or a namespace with a token credential
 * (`DefaultAzureCredential` when none is given). `NAME` stands for `NAME.servicebus.windows.net`.
 */
export type ServiceBusConnection = { connectionString: string } | { namespace: string; credential?: TokenCredential };

/**
 * A pipeline policy of the administration client (structurally `PipelinePolicy` of
 * `@azure/core-rest-pipeline`), e.g. `adminPolicy(endpoint)` of `@jobq/servicebus-emulator`.
 */
export type AdminPolicy = Parameters<ServiceBusAdministrationClient['pipeline']['addPolicy']>[0];

/** The namespace host for a namespace name or host: `NAME` → `NAME.servicebus.windows.net`. */
export function namespaceHost(namespace: string): string {
  const text = namespace
    .trim()
    .replace(/^(sb|https?|amqps?):\/\//i, '')
    .replace(/\/+$/, '');
  if (text.includes('.')) {
    if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(text)) throw new JobqError('invalid-config', `"${namespace}" is not a Service Bus namespace host`);
    return text.toLowerCase();
  }
  // Azure's rule for namespace names: 6–50 letters, digits and hyphens, starting with a letter, not ending with a hyphen.
  if (!/^[A-Za-z][A-Za-z0-9-]{4,48}[A-Za-z0-9]$/.test(text)) {
    throw new JobqError(
      'invalid-config',
      `"${namespace}" is not a Service Bus namespace name (6–50 letters, digits and hyphens, starting with a letter)`,
    );
  }
  return `${text.toLowerCase()}.servicebus.windows.net`;
}

/** The fields of a connection string, keys lowercased; errors never quote the string. */
function connectionStringFields(connectionString: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const part of connectionString.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return fields;
}

/** What a connection names: the namespace host, and whether it is the local emulator. */
export function describeConnection(connection: ServiceBusConnection): { host: string; emulator: boolean } {
  if ('namespace' in connection) return { host: namespaceHost(connection.namespace), emulator: false };
  const fields = connectionStringFields(connection.connectionString);
  const endpoint = fields.get('endpoint');
  if (!endpoint) throw new JobqError('invalid-config', 'the Service Bus connection string has no Endpoint');
  const host = endpoint.replace(/^[a-z]+:\/\//i, '').replace(/\/.*$/, '');
  if (host === '') throw new JobqError('invalid-config', 'the Service Bus connection string has an empty Endpoint');
  if (fields.has('entitypath'))
    throw new JobqError('invalid-config', 'the Service Bus connection string names an entity (EntityPath); give the namespace-level one');
  return { host: host.toLowerCase(), emulator: (fields.get('usedevelopmentemulator') ?? '').toLowerCase() === 'true' };
}

interface PooledClient {
  client: ServiceBusClient;
  users: number;
}

const pool = new Map<string, PooledClient>();
const credentialIds = new WeakMap<object, number>();
let nextCredentialId = 1;
let defaultCredential: TokenCredential | undefined;

function credentialId(credential: TokenCredential): number {
  let id = credentialIds.get(credential);
  if (id === undefined) {
    id = nextCredentialId++;
    credentialIds.set(credential, id);
  }
  return id;
}

/** The credential for a namespace connection: the given one, or one shared `DefaultAzureCredential`. */
function credentialOf(connection: { credential?: TokenCredential }): TokenCredential {
  if (connection.credential) return connection.credential;
  defaultCredential ??= new DefaultAzureCredential();
  return defaultCredential;
}

/** A shared client: release it with {@link releaseClient} once per acquisition. */
export interface ClientLease {
  readonly client: ServiceBusClient;
  release(): Promise<void>;
}

/**
 * The one `ServiceBusClient` (one AMQP connection) for a namespace, credential and retry settings,
 * shared by every queue opened on it; it is closed when the last queue using it closes.
 */
export function acquireClient(connection: ServiceBusConnection, retryOptions: RetryOptions): ClientLease {
  const who =
    'connectionString' in connection
      ? `s:${connection.connectionString}`
      : `c:${namespaceHost(connection.namespace)}:${credentialId(credentialOf(connection))}`;
  const key = `${who}|${JSON.stringify(retryOptions)}`;
  let pooled = pool.get(key);
  if (!pooled) {
    let client: ServiceBusClient;
    try {
      client =
        'connectionString' in connection
          ? new ServiceBusClient(connection.connectionString, { retryOptions })
          : new ServiceBusClient(namespaceHost(connection.namespace), credentialOf(connection), { retryOptions });
    } catch {
      // The SDK's message can quote the connection string: say only what is wrong.
      throw new JobqError('invalid-config', 'the Service Bus connection string or namespace is not valid');
    }
    pooled = { client, users: 0 };
    pool.set(key, pooled);
  }
  pooled.users++;
  const entry = pooled;
  let released = false;
  return {
    client: entry.client,
    async release() {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.users > 0) return;
      if (pool.get(key) === entry) pool.delete(key);
      await entry.client.close().catch(() => undefined);
    },
  };
}

/** The number of shared clients open now (for tests). */
export function openClientCount(): number {
  return pool.size;
}

/**
 * An administration client for the connection, or null when there is none to reach: the local
 * emulator's connection string without an admin policy pointing at its admin endpoint.
 */
export function createAdminClient(
  connection: ServiceBusConnection,
  policies: readonly AdminPolicy[],
): ServiceBusAdministrationClient | null {
  const { host, emulator } = describeConnection(connection);
  if (emulator && policies.length === 0) return null;
  let admin: ServiceBusAdministrationClient;
  try {
    admin =
      'connectionString' in connection
        ? new ServiceBusAdministrationClient(connection.connectionString)
        : new ServiceBusAdministrationClient(host, credentialOf(connection));
  } catch {
    throw new JobqError('invalid-config', 'the Service Bus connection string or namespace is not valid');
  }
  for (const policy of policies) admin.pipeline.addPolicy(policy);
  return admin;
}

type SocketHolder = { _connectionContext?: { connection?: { _connection?: { socket?: { setNoDelay?: (noDelay: boolean) => unknown } } } } };

/**
 * Turns Nagle's algorithm off on the client's AMQP socket (the SDK offers no option for it, and its
 * AMQP library leaves it on for links attached through a session). With it on, the drain that ends a
 * receive's top-up waits behind the top-up's credit until the broker's delayed ACK (about 40 ms on
 * Linux), whatever the fill wait. Applied on every receive, so a reconnected socket gets it too; a
 * socket of another shape is left as it is.
 */
export function disableNagle(client: ServiceBusClient): void {
  const socket = (client as unknown as SocketHolder)._connectionContext?.connection?._connection?.socket;
  if (typeof socket?.setNoDelay === 'function') socket.setNoDelay(true);
}
