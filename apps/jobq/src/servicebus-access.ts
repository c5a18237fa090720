import { errorMessage } from '@jobq/ports';
import type { CliConfig } from './config';
import { UsageError } from './errors';

// This module stays free of the Service Bus SDK (it is loaded by every command); the adapter
// (`@jobq/queue-servicebus`) is imported only when a Service Bus queue is opened (see queues.ts).

/** `sb://local`: the local broker (the embedded stack, `jobq dev`, or the connection string's). */
export const LOCAL_NAMESPACE = 'local';

/** The suffix of a bare namespace name (`NAME` → `NAME.servicebus.windows.net`). */
const AZURE_SUFFIX = '.servicebus.windows.net';

export function isLocalNamespace(namespace: string): boolean {
  return namespace.toLowerCase() === LOCAL_NAMESPACE;
}

/** Why `namespace` (of `sb://NAMESPACE`) is not one, or null: `local`, a namespace NAME, or a host. */
export function serviceBusNamespaceProblem(namespace: string): string | null {
  if (isLocalNamespace(namespace)) return null;
  if (namespace.includes('.')) {
    return /^[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z0-9-]+)+$/.test(namespace) ? null : `"${namespace}" is not a Service Bus namespace host`;
  }
  // Azure's rule for namespace names: 6–50 letters, digits and hyphens, starting with a letter, not ending with a hyphen.
  return /^[A-Za-z][A-Za-z0-9-]{4,48}[A-Za-z0-9]$/.test(namespace)
    ? null
    : `"${namespace}" is not a Service Bus namespace name (6–50 letters, digits and hyphens, starting with a letter; or a host such as NAME.servicebus.windows.net; or local)`;
}

/** The namespace host of `sb://NAMESPACE` (`NAME` → `NAME.servicebus.windows.net`), lowercased. */
export function serviceBusHost(namespace: string): string {
  const text = namespace.toLowerCase();
  return text.includes('.') ? text : `${text}${AZURE_SUFFIX}`;
}

/** What a Service Bus connection string names (never its key): the Endpoint's host and whether it is a local emulator's. */
export function describeServiceBusConnectionString(connectionString: string): { host: string | null; emulator: boolean } {
  const fields = new Map<string, string>();
  for (const part of connectionString.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const endpoint = fields.get('endpoint') ?? '';
  const host = endpoint
    .replace(/^[a-z]+:\/\//i, '')
    .replace(/\/.*$/, '')
    .toLowerCase();
  return { host: host === '' ? null : host, emulator: (fields.get('usedevelopmentemulator') ?? '').toLowerCase() === 'true' };
}

/** How the CLI reaches one Service Bus namespace. Holds the connection string (a secret) only inside `connection`. */
export interface ServiceBusAccess {
  /** The namespace as written after `sb://` (`local` for the local broker). */
  namespace: string;
  /** What identifies the namespace in the queue pool (lowercased). */
  key: string;
  connection: { connectionString: string } | { namespace: string };
  /** The admin endpoint of a local broker, when known (emulator connection strings only). */
  adminEndpoint: string | null;
  /** In words, without the secret. */
  description: string;
}

/** Where the configured Service Bus connection string came from, in words. */
function origin(config: CliConfig): string {
  const { source, from } = config.serviceBusConnectionString;
  if (from === null) return 'the local broker';
  return source === 'file' ? `config file ${from}` : from;
}

/**
 * How to reach `sb://NAMESPACE`: the configured connection string when its Endpoint names this
 * namespace (`NAME` stands for `NAME.servicebus.windows.net`, a host for itself) or the namespace
 * is `local`; else `DefaultAzureCredential`. `sb://local` with no connection string (no embedded
 * stack, no `JOBQ_SERVICEBUS_CONNECTION_STRING`) is a usage error.
 */
export function serviceBusAccess(config: CliConfig, namespace: string): ServiceBusAccess {
  const problem = serviceBusNamespaceProblem(namespace);
  if (problem !== null) throw new UsageError(`sb://${namespace}: ${problem}`);
  const connectionString = config.serviceBusConnectionString.value;
  const local = isLocalNamespace(namespace);
  if (connectionString !== null) {
    const described = describeServiceBusConnectionString(connectionString);
    if (described.host === null) {
      throw new UsageError(
        `${origin(config)}: the Service Bus connection string has no Endpoint (expected Endpoint=sb://NAMESPACE.servicebus.windows.net/;…)`,
      );
    }
    if (local || described.host === serviceBusHost(namespace)) {
      const adminEndpoint = described.emulator ? config.serviceBusAdminEndpoint.value : null;
      return {
        namespace,
        key: `cs:${described.host}`,
        connection: { connectionString },
        adminEndpoint,
        description: `connection string from ${origin(config)} (${described.emulator ? `local broker at ${described.host}${adminEndpoint === null ? ', no admin endpoint' : `, admin ${adminEndpoint}`}` : described.host})`,
      };
    }
  }
  if (local) {
    throw new UsageError(
      'sb://local names the local Service Bus broker, but none is configured: run `jobq workflow run` without storage settings (it starts one), ' +
        'or point JOBQ_SERVICEBUS_CONNECTION_STRING at a running one (`jobq dev --queues sb://local` prints it)',
    );
  }
  const host = serviceBusHost(namespace);
  const passedOver =
    connectionString === null
      ? ''
      : ` (the connection string from ${origin(config)} is for ${describeServiceBusConnectionString(connectionString).host ?? '?'}: not used)`;
  return {
    namespace,
    key: `ns:${host}`,
    connection: { namespace: host },
    adminEndpoint: null,
    description: `DefaultAzureCredential on ${host}${passedOver}`,
  };
}

/** The namespace of `JOBQ_WORKFLOW_QUEUES` when it is `sb://NAMESPACE`, else null. */
export function queuesNamespace(config: CliConfig): string | null {
  const queues = config.queues.value;
  return queues !== null && queues.startsWith('sb://') ? queues.slice('sb://'.length) : null;
}

/** One line for `config show` and `doctor`: how `sb://NAMESPACE` is reached, or why it cannot be. */
export function serviceBusAccessLine(config: CliConfig, namespace: string): string {
  try {
    return `sb://${namespace}: ${serviceBusAccess(config, namespace).description}`;
  } catch (error) {
    return `sb://${namespace}: ${errorMessage(error)}`;
  }
}
