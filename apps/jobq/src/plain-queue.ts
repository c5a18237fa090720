import { parseQueueSpec } from '@jobq/dag-core';
import { JobqError } from '@jobq/ports';
import { openStorageQueue, type StorageTaskQueue } from '@jobq/queue-storage';
import { describeConnectionString } from '@jobq/worker';
import type { CliConfig } from './config';
import { connectionFor } from './deployment';
import { UsageError } from './errors';

/** Options of {@link openPlainQueue}. */
export interface PlainQueueOptions {
  /** Lock (visibility) duration of received messages (default 30 s). */
  lockDurationInMs?: number;
  /** Create the queue when missing (default true). */
  createIfMissing?: boolean;
}

/**
 * The account a bare queue `NAME` lives on: `JOBQ_WORKFLOW_QUEUES` when it names a storage
 * account, else the prefix's account, else the connection string's account (its AccountName or
 * the account of its endpoints), else Azurite's.
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

/** `{ account, name }` of a Storage Queue spec (`NAME` or `ACCOUNT/NAME`), or a usage error. */
export function plainQueueLocation(config: CliConfig, spec: string): { account: string; name: string } {
  const parsed = parseQueueSpec(spec);
  if (!parsed.ok) throw new UsageError(parsed.error);
  switch (parsed.value.backend) {
    case 'default':
      if (config.queues.value?.startsWith('sb://')) {
        throw new JobqError('invalid-config', `${config.queues.from}: Service Bus queues (${config.queues.value}) are not supported yet; use a storage ACCOUNT`);
      }
      return { account: defaultQueueAccount(config), name: parsed.value.name };
    case 'storage':
      return { account: parsed.value.account, name: parsed.value.name };
    case 'servicebus':
      throw new JobqError('invalid-config', `queue ${spec}: Service Bus queues are not supported yet`);
  }
}

/**
 * Opens a Storage Queue given as `ACCOUNT/NAME` or `NAME` without a workflow deployment, with the
 * configuration's connection string for that account (or `DefaultAzureCredential`).
 */
export async function openPlainQueue(config: CliConfig, spec: string, options: PlainQueueOptions = {}): Promise<StorageTaskQueue> {
  const { account, name } = plainQueueLocation(config, spec);
  return openStorageQueue({
    connection: connectionFor(config, account),
    queueName: name,
    lockDurationInMs: options.lockDurationInMs ?? 30_000,
    createIfMissing: options.createIfMissing ?? true,
  });
}
