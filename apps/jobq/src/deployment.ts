import { parseQueueSpec, type QueueSpec } from '@jobq/dag-core';
import { JobqError } from '@jobq/ports';
import { WorkflowClient } from '@jobq/coordinator';
import { openStorageQueue, type StorageTaskQueue } from '@jobq/queue-storage';
import { openOutputStore, openWorkflowStore, type AzureOutputStore, type AzureWorkflowStore } from '@jobq/store-azure';
import type { WorkflowPrefix } from '@jobq/worker';
import { requirePrefix, type CliConfig } from './config';
import { storageChoice } from './storage-access';

/** How a storage account is reached: a connection string or its name with `DefaultAzureCredential`. */
export type AccountConnection = { connectionString: string } | { accountName: string };

/** Options of {@link openDeployment}. */
export interface DeploymentOptions {
  /** Map every `ACCOUNT/…` queue onto the prefix's account (the embedded stack). Default false. */
  mapAllAccounts?: boolean;
  /** Lock (visibility) duration of the task queues opened here (default 30 s). */
  lockDurationInMs?: number;
  /** Lock duration of the completion queue (default: the configured `--visibility-timeout-s`). */
  completionLockDurationInMs?: number;
  /** Create containers, tables and queues when missing (default true). */
  createIfMissing?: boolean;
}

/**
 * One prefix's adapters (SPEC §6, §10), built from the resolved configuration: the workflow store,
 * the outputs target, the completion queue and a pool of task queues by queue spec.
 */
export interface Deployment {
  prefix: WorkflowPrefix;
  store: AzureWorkflowStore;
  outputs: AzureOutputStore;
  completions: StorageTaskQueue;
  client: WorkflowClient;
  /** The task queue of a queue spec (`NAME`, `ACCOUNT/NAME`), opened once and kept. */
  queue(spec: string): Promise<StorageTaskQueue>;
  /** How to reach an account (for worker environments and the task helpers). */
  connectionFor(account: string): AccountConnection;
  /** `ACCOUNT/PREFIX` as text. */
  target: string;
  /**
   * The deployment's settings a worker hands to its tasks (`jobq task …` names it in errors). No
   * storage credential: the task helpers reach storage through the worker's task channel.
   */
  taskEnvironment: Record<string, string>;
}

/**
 * The storage connection for an account from the resolved configuration: its connection string
 * when that is for the account (key, SAS or endpoints), the local emulator for `devstoreaccount1`,
 * else `DefaultAzureCredential` (see `storageAccess` for the same choice in words).
 */
export function connectionFor(config: CliConfig, account: string): AccountConnection {
  return storageChoice(config, account).connection;
}

/** Opens the adapters of the configured prefix (a clear usage error when no prefix is configured). */
export async function openDeployment(config: CliConfig, options: DeploymentOptions = {}): Promise<Deployment> {
  const prefix = requirePrefix(config);
  if (config.queues.value?.startsWith('sb://')) {
    throw new JobqError('invalid-config', `${config.queues.from}: Service Bus queues (${config.queues.value}) are not supported yet; use a storage ACCOUNT`);
  }
  const account = (name: string): AccountConnection => (options.mapAllAccounts ? connectionFor(config, prefix.account) : connectionFor(config, name));
  const queuesAccount = options.mapAllAccounts ? prefix.account : (config.queues.value ?? prefix.account);
  const createIfMissing = options.createIfMissing ?? true;
  const store = await openWorkflowStore({ connection: account(prefix.account), prefix: prefix.prefix, createIfMissing });
  let outputTarget = {};
  if (config.blobs.value !== null && !options.mapAllAccounts) {
    const [blobAccount, container] = config.blobs.value.split('/') as [string, string];
    outputTarget = { outputs: { container, connection: account(blobAccount) } };
  }
  const outputs = await openOutputStore({ connection: account(prefix.account), prefix: prefix.prefix, createIfMissing, ...outputTarget });
  const completions = await openStorageQueue({
    connection: account(queuesAccount),
    queueName: store.names.completionQueue,
    lockDurationInMs: options.completionLockDurationInMs ?? Math.round(config.coordinator.visibilityTimeoutS.value * 1000),
    createIfMissing,
  });
  const pool = new Map<string, Promise<StorageTaskQueue>>();
  const queue = (spec: string): Promise<StorageTaskQueue> => {
    let opened = pool.get(spec);
    if (!opened) {
      const parsed = parseQueueSpec(spec);
      if (!parsed.ok) return Promise.reject(new JobqError('invalid-config', parsed.error));
      const { connection, queueName } = queueLocation(parsed.value, queuesAccount, account);
      opened = openStorageQueue({ connection, queueName, lockDurationInMs: options.lockDurationInMs ?? 30_000, createIfMissing });
      opened.catch(() => pool.delete(spec));
      pool.set(spec, opened);
    }
    return opened;
  };
  const client = new WorkflowClient({ store, completions, outputsContainer: outputs.outputsContainer });
  const taskEnvironment: Record<string, string> = { JOBQ_WORKFLOW_PREFIX: `${prefix.account}/${prefix.prefix}` };
  if (config.queues.value !== null && !options.mapAllAccounts) taskEnvironment.JOBQ_WORKFLOW_QUEUES = config.queues.value;
  if (config.blobs.value !== null && !options.mapAllAccounts) taskEnvironment.JOBQ_WORKFLOW_BLOBS = config.blobs.value;
  return {
    prefix,
    store,
    outputs,
    completions,
    client,
    queue,
    connectionFor: account,
    target: `${prefix.account}/${prefix.prefix}`,
    taskEnvironment,
  };
}

function queueLocation(
  spec: QueueSpec,
  defaultAccount: string,
  account: (name: string) => AccountConnection,
): { connection: AccountConnection; queueName: string } {
  switch (spec.backend) {
    case 'default':
      return { connection: account(defaultAccount), queueName: spec.name };
    case 'storage':
      return { connection: account(spec.account), queueName: spec.name };
    case 'servicebus':
      throw new JobqError('invalid-config', `queue sb://${spec.namespace}/${spec.name}: Service Bus queues are not supported yet`);
  }
}
