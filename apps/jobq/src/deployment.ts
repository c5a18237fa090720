import {
  JobqError,
  ShardRouter,
  noopInstruments,
  shardCompletionQueue,
  type Instruments,
  type TaskQueue,
  type WorkerRegistry,
} from '@jobq/ports';
import { WorkflowClient } from '@jobq/coordinator';
import {
  openOutputStore,
  openOwnershipStore,
  openWorkerRegistry,
  openWorkflowStore,
  storeNames,
  type AzureOutputStore,
  type AzureOwnershipStore,
  type AzureWorkflowStore,
} from '@jobq/store-azure';
import type { WorkflowPrefix } from '@jobq/ports';
import { closeWhenDone } from './closing';
import { storageRequestPolicies } from './metrics';
import { requirePrefix, type CliConfig } from './config';
import { withStorageCredential } from './credential';
import { UsageError } from './errors';
import {
  checkServiceBusLockDuration,
  openQueueAt,
  queueLocation,
  storageConnection,
  type AccountConnection,
  type QueueLocation,
} from './queues';
import { queuesNamespace } from './servicebus-access';

export type { AccountConnection } from './queues';

/** Options of {@link openDeployment}. */
export interface DeploymentOptions {
  /**
   * Map every `ACCOUNT/…` queue onto the prefix's account and every `sb://…` queue onto the local
   * broker (the embedded stack). Default false.
   */
  mapAllAccounts?: boolean;
  /** Lock (visibility) duration of the task queues opened here (default 30 s). */
  lockDurationInMs?: number;
  /** Lock duration of the completion queue (default: the configured `--visibility-timeout`). */
  completionLockDurationInMs?: number;
  /** Create containers, tables and queues when missing (default true). */
  createIfMissing?: boolean;
  /** Counts the storage requests of the clients opened here (`jobq_storage_requests_total`; default: not counted). */
  instruments?: Instruments;
  /**
   * Duration of the shard leases taken through `ownership()`: whole seconds, 15–60 s (default 60 s;
   * renewed every quarter of it). A member then counts as live for as long after its last heartbeat.
   */
  shardLeaseDurationInMs?: number;
  /** Where the shard router says what it could not do (default: stderr). */
  log?: (line: string) => void;
}

/**
 * One prefix's adapters (docs/design.md#storage-layout, docs/design.md#queues-and-backends), built from the resolved configuration: the workflow store,
 * the outputs target, the completion queue and a pool of task queues by queue spec.
 */
export interface Deployment {
  prefix: WorkflowPrefix;
  store: AzureWorkflowStore;
  outputs: AzureOutputStore;
  completions: TaskQueue;
  /** The completion queue as a queue spec (`ACCOUNT/NAME` or `sb://NAMESPACE/NAME`). */
  completionsSpec: string;
  /**
   * The completion queue of shard `shard` (docs/sharding.md#names): `completions` for shard 0,
   * `{p}-workflow-completions-{k}` beside it for k ≥ 1, opened once and kept (created when missing
   * unless the deployment was opened with `createIfMissing: false`).
   */
  shardCompletions(shard: number): Promise<TaskQueue>;
  /** The queue spec of shard `shard`'s completion queue. */
  shardCompletionsSpec(shard: number): string;
  /** The shard manifest, shard leases and coordinator members of the prefix (opened on first use). */
  ownership(): Promise<AzureOwnershipStore>;
  /**
   * Routes completions and wake-ups to their workflow's shard's queue by the manifest, read at first
   * use and every 60 s (docs/sharding.md#routing): the workers' and `client`'s route.
   */
  route: ShardRouter;
  client: WorkflowClient;
  /**
   * The task queue of a queue spec (`NAME`, `ACCOUNT/NAME`, `sb://NAMESPACE/NAME`), opened once and
   * kept; specs naming the same queue (Service Bus names differ only in case) share it.
   */
  queue(spec: string): Promise<TaskQueue>;
  /** Where a queue spec lives (a usage error for a malformed spec or an unconfigured `sb://local`). */
  locate(spec: string): QueueLocation;
  /** How to reach an account (for worker environments and the task helpers). */
  connectionFor(account: string): AccountConnection;
  /** `ACCOUNT/PREFIX` as text. */
  target: string;
  /**
   * The deployment's settings a worker hands to its tasks (`jobq task …` names it in errors). No
   * storage or Service Bus credential: the task helpers reach storage through the worker's task channel.
   */
  taskEnvironment: Record<string, string>;
  /**
   * The worker heartbeats (`{PREFIX}Workers`, docs/design.md#worker-heartbeats), opened on first use
   * (the table is created then, unless the deployment was opened with `createIfMissing: false`).
   */
  workers: WorkerRegistry;
  /** Closes the queues opened here (Service Bus connections); also done when the command ends. */
  close(): Promise<void>;
}

/**
 * The storage connection for an account from the resolved configuration: its connection string
 * when that is for the account (key, SAS or endpoints), the local emulator for `devstoreaccount1`,
 * else `DefaultAzureCredential` (see `storageAccess` for the same choice in words).
 */
export function connectionFor(config: CliConfig, account: string): AccountConnection {
  return storageConnection(config, account);
}

/** Opens the adapters of the configured prefix (a clear usage error when no prefix is configured). */
export async function openDeployment(config: CliConfig, options: DeploymentOptions = {}): Promise<Deployment> {
  const prefix = requirePrefix(config);
  const mapAllTo = options.mapAllAccounts ? prefix.account : null;
  // Every adapter that signs with a token gets the process's one credential (one token cache).
  const account = (name: string): AccountConnection => withStorageCredential(connectionFor(config, mapAllTo ?? name));
  const locate = (spec: string): QueueLocation => queueLocation(config, spec, { defaultAccount: prefix.account, mapAllTo });
  const createIfMissing = options.createIfMissing ?? true;
  const completionLockDurationInMs = options.completionLockDurationInMs ?? Math.round(config.coordinator.visibilityTimeoutS.value * 1000);
  const completionSpec = (name: string): string => {
    const namespace = queuesNamespace(config);
    return namespace === null ? `${mapAllTo ?? config.queues.value ?? prefix.account}/${name}` : `sb://${namespace}/${name}`;
  };
  // Located before anything is opened: a bad setting is a usage error, whatever the command.
  const completionQueueName = storeNames(prefix.prefix).completionQueue;
  const completionsSpec = completionSpec(completionQueueName);
  const shardCompletionsSpec = (shard: number): string => completionSpec(shardCompletionQueue(completionQueueName, shard));
  const completionsLocation = locate(completionsSpec);
  if (completionsLocation.backend === 'servicebus')
    checkServiceBusLockDuration(
      completionLockDurationInMs,
      config.coordinator.visibilityTimeoutS.from ?? 'the completion visibility timeout (--visibility-timeout)',
    );

  const policies = storageRequestPolicies(options.instruments ?? noopInstruments);
  const counted = policies.blob.length > 0 ? { blobPolicies: policies.blob, tablePolicies: policies.table } : {};
  const store = await openWorkflowStore({ connection: account(prefix.account), prefix: prefix.prefix, createIfMissing, ...counted });
  let outputTarget = {};
  if (config.blobs.value !== null && !options.mapAllAccounts) {
    const [blobAccount, container] = config.blobs.value.split('/') as [string, string];
    outputTarget = { outputs: { container, connection: account(blobAccount) } };
  }
  const blobCounted = policies.blob.length > 0 ? { blobPolicies: policies.blob } : {};
  const outputs = await openOutputStore({
    connection: account(prefix.account),
    prefix: prefix.prefix,
    createIfMissing,
    ...outputTarget,
    ...blobCounted,
  });
  const instruments = options.instruments ?? noopInstruments;
  const completions = await openQueueAt(completionsLocation, {
    lockDurationInMs: completionLockDurationInMs,
    createIfMissing,
    policies: policies.queue,
    instruments,
  });
  const opened: TaskQueue[] = [completions];
  const pool = new Map<string, Promise<TaskQueue>>();
  const queue = (spec: string): Promise<TaskQueue> => {
    let location: QueueLocation;
    try {
      location = locate(spec);
    } catch (error) {
      return Promise.reject(error instanceof UsageError ? new JobqError('invalid-config', error.message) : (error as Error));
    }
    let pending = pool.get(location.key);
    if (!pending) {
      pending = openQueueAt(location, {
        lockDurationInMs: options.lockDurationInMs ?? 30_000,
        createIfMissing,
        policies: policies.queue,
        instruments,
      });
      pending.then(
        (q) => opened.push(q),
        () => pool.delete(location.key),
      );
      pool.set(location.key, pending);
    }
    return pending;
  };
  const shardQueues = new Map<number, Promise<TaskQueue>>([[0, Promise.resolve(completions)]]);
  const shardCompletions = (shard: number): Promise<TaskQueue> => {
    let pending = shardQueues.get(shard);
    if (!pending) {
      let location: QueueLocation;
      try {
        location = locate(shardCompletionsSpec(shard));
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
      pending = openQueueAt(location, {
        lockDurationInMs: completionLockDurationInMs,
        createIfMissing,
        policies: policies.queue,
        instruments,
      });
      pending.then(
        (q) => opened.push(q),
        () => shardQueues.delete(shard),
      );
      shardQueues.set(shard, pending);
    }
    return pending;
  };
  let ownershipStore: Promise<AzureOwnershipStore> | null = null;
  const ownership = (): Promise<AzureOwnershipStore> => {
    if (ownershipStore === null) {
      const leaseDurationInMs = options.shardLeaseDurationInMs;
      const opening = openOwnershipStore({
        connection: account(prefix.account),
        prefix: prefix.prefix,
        createIfMissing,
        ...blobCounted,
        ...(leaseDurationInMs === undefined
          ? {}
          : { leaseDurationInMs, renewIntervalInMs: leaseDurationInMs / 4, memberLiveForInMs: leaseDurationInMs }),
      });
      opening.catch(() => {
        ownershipStore = null;
      });
      ownershipStore = opening;
    }
    return ownershipStore;
  };
  const route = new ShardRouter({
    manifest: { readManifestIfChanged: async (etag, o) => (await ownership()).readManifestIfChanged(etag, o) },
    queueOf: shardCompletions,
    log: options.log ?? ((line) => process.stderr.write(`jobq: ${line}\n`)),
  });
  const client = new WorkflowClient({ store, completions, route, outputsContainer: outputs.outputsContainer });
  let registry: Promise<WorkerRegistry> | null = null;
  const openRegistry = (): Promise<WorkerRegistry> => {
    if (registry === null) {
      const opening: Promise<WorkerRegistry> = openWorkerRegistry({
        connection: account(prefix.account),
        prefix: prefix.prefix,
        createIfMissing,
        ...(policies.table.length > 0 ? { tablePolicies: policies.table } : {}),
      });
      opening.catch(() => {
        registry = null;
      });
      registry = opening;
    }
    return registry;
  };
  const workers: WorkerRegistry = {
    beat: async (heartbeat, o) => (await openRegistry()).beat(heartbeat, o),
    remove: async (id, o) => (await openRegistry()).remove(id, o),
    list: async (o) => (await openRegistry()).list(o),
    prune: async (age, o) => (await openRegistry()).prune(age, o),
  };
  const taskEnvironment: Record<string, string> = { JOBQ_WORKFLOW_PREFIX: `${prefix.account}/${prefix.prefix}` };
  if (config.queues.value !== null && !options.mapAllAccounts) taskEnvironment.JOBQ_WORKFLOW_QUEUES = config.queues.value;
  if (config.blobs.value !== null && !options.mapAllAccounts) taskEnvironment.JOBQ_WORKFLOW_BLOBS = config.blobs.value;
  const close = async (): Promise<void> => {
    await Promise.all(opened.splice(0).map((q) => q.close().catch(() => undefined)));
  };
  closeWhenDone(close);
  return {
    prefix,
    store,
    outputs,
    completions,
    completionsSpec,
    shardCompletions,
    shardCompletionsSpec,
    ownership,
    route,
    client,
    queue,
    locate,
    connectionFor: account,
    target: `${prefix.account}/${prefix.prefix}`,
    taskEnvironment,
    workers,
    close,
  };
}
