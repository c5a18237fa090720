import type { TaskQueue } from '@jobq/ports';
import { describeConnectionString } from '@jobq/azure-pipeline';
import type { CliConfig } from './config';
import { checkServiceBusLockDuration, openQueueAt, queueLocation, type OpenQueueOptions, type QueueLocation } from './queues';

/** Options of {@link openPlainQueue}. */
export interface PlainQueueOptions {
  /** Lock (visibility) duration of received messages (default 30 s); the LockDuration of a Service Bus queue it creates. */
  lockDurationInMs?: number;
  /** Create the queue when missing (default true). */
  createIfMissing?: boolean;
  /** Extra request policies of a Storage queue's client (the storage request metrics). */
  policies?: OpenQueueOptions['policies'];
  /** Where a Service Bus queue counts its calls to the broker (the storage request metrics). */
  instruments?: OpenQueueOptions['instruments'];
}

/**
 * The account a bare queue `NAME` lives on when `JOBQ_WORKFLOW_QUEUES` is not `sb://…`: that
 * setting when it names a storage account, else the prefix's account, else the connection
 * string's account (its AccountName or the account of its endpoints), else Azurite's.
 */
export function defaultQueueAccount(config: CliConfig): string {
  const queues = config.queues.value;
  if (queues !== null && !queues.startsWith('sb://')) return queues;
  if (config.prefix.value !== null) return config.prefix.value.account;
  const connectionString = config.connectionString.value;
  if (connectionString !== null) {
    const account = describeConnectionString(connectionString).account;
    if (account !== null) return account;
  }
  return 'devstoreaccount1';
}

/**
 * Where a plain queue spec lives: `NAME` (on `JOBQ_WORKFLOW_QUEUES`: a storage account or
 * `sb://NAMESPACE`, else the default account), `ACCOUNT/NAME` or `sb://NAMESPACE/NAME`. A bad spec
 * or an unconfigured `sb://local` is a usage error.
 */
export function plainQueueLocation(config: CliConfig, spec: string): QueueLocation {
  return queueLocation(config, spec, { defaultAccount: defaultQueueAccount(config) });
}

/**
 * Opens a queue without a workflow deployment, with the configuration's credentials for its
 * account or namespace (else `DefaultAzureCredential`). For a Service Bus queue the lock duration
 * must be 5 s – 5 min (a usage error naming `lockDurationFrom` otherwise).
 */
export async function openPlainQueue(
  config: CliConfig,
  spec: string,
  options: PlainQueueOptions = {},
  lockDurationFrom = '--visibility-timeout',
): Promise<TaskQueue> {
  const location = plainQueueLocation(config, spec);
  const lockDurationInMs = options.lockDurationInMs ?? 30_000;
  if (location.backend === 'servicebus') checkServiceBusLockDuration(lockDurationInMs, lockDurationFrom);
  return openQueueAt(location, {
    lockDurationInMs,
    createIfMissing: options.createIfMissing ?? true,
    ...(options.policies ? { policies: options.policies } : {}),
    ...(options.instruments ? { instruments: options.instruments } : {}),
  });
}
