import { parseQueueSpec } from '@jobq/dag-core';
import { SERVICE_BUS_MAX_MESSAGE_BYTES } from '@jobq/dag-core/wire';
import {
  JobqError,
  isJobqError,
  type Instruments,
  type OperationOptions,
  type OutgoingMessage,
  type PeekedMessage,
  type ReceiveOptions,
  type ReceivedMessage,
  type TaskQueue,
} from '@jobq/ports';
import { openStorageQueue, type OpenStorageQueueOptions } from '@jobq/queue-storage';
import type { ServiceBusQueueDescription } from '@jobq/queue-servicebus';
import { closeWhenDone } from './closing';
import { withServiceBusCredential, withStorageCredential } from './credential';
import { loadLocalStack } from './embedded';
import type { CliConfig } from './config';
import { UsageError } from './errors';
import { queuesNamespace, serviceBusAccess, type ServiceBusAccess } from './servicebus-access';
import { storageChoice } from './storage-access';

/** How a storage account is reached: a connection string or its name with `DefaultAzureCredential`. */
export type AccountConnection = { connectionString: string } | { accountName: string };

/** Where a queue spec lives once the configuration is applied. */
export type QueueLocation =
  | { backend: 'storage'; account: string; queueName: string; connection: AccountConnection; key: string }
  | { backend: 'servicebus'; access: ServiceBusAccess; queueName: string; key: string };

/** Service Bus accepts lock durations of 5 s – 5 min (LockDuration). */
export const SERVICE_BUS_MIN_LOCK_MS = 5_000;
export const SERVICE_BUS_MAX_LOCK_MS = 300_000;

/** How {@link queueLocation} maps specs. */
export interface LocationOptions {
  /** The account of a bare `NAME` when `JOBQ_WORKFLOW_QUEUES` is not `sb://…`. */
  defaultAccount: string;
  /**
   * The embedded stack: every `ACCOUNT/NAME` lives on this account and every `sb://ANY/NAME` on
   * the local broker (`sb://local`). Null: specs are taken as written.
   */
  mapAllTo?: string | null;
}

/** The storage connection for an account: the same choice `config show` reports. */
export function storageConnection(config: CliConfig, account: string): AccountConnection {
  return storageChoice(config, account).connection;
}

/**
 * Where a queue spec lives: `NAME` on `JOBQ_WORKFLOW_QUEUES` (a storage account, or the namespace
 * of `sb://NAMESPACE`), `ACCOUNT/NAME` on that storage account, `sb://NAMESPACE/NAME` on that
 * namespace. Service Bus names are case-insensitive, so their pool key is lowercased. A malformed
 * spec, or `sb://local` with no local broker configured, is a usage error.
 */
export function queueLocation(config: CliConfig, spec: string, options: LocationOptions): QueueLocation {
  const parsed = parseQueueSpec(spec);
  if (!parsed.ok) throw new UsageError(parsed.error);
  const mapAll = options.mapAllTo ?? null;
  const storage = (account: string, queueName: string): QueueLocation => {
    const on = mapAll ?? account;
    return { backend: 'storage', account: on, queueName, connection: storageConnection(config, on), key: `storage:${on}/${queueName}` };
  };
  const serviceBus = (namespace: string, queueName: string): QueueLocation => {
    const access = serviceBusAccess(config, mapAll === null ? namespace : 'local');
    return { backend: 'servicebus', access, queueName, key: `sb:${access.key}/${queueName.toLowerCase()}` };
  };
  const value = parsed.value;
  switch (value.backend) {
    case 'default': {
      const namespace = queuesNamespace(config);
      return namespace === null ? storage(config.queues.value ?? options.defaultAccount, value.name) : serviceBus(namespace, value.name);
    }
    case 'storage':
      return storage(value.account, value.name);
    case 'servicebus':
      return serviceBus(value.namespace, value.name);
  }
}

/** A lock duration for a Service Bus queue, or a usage error naming where it came from. */
export function checkServiceBusLockDuration(lockDurationInMs: number, where: string): void {
  if (lockDurationInMs < SERVICE_BUS_MIN_LOCK_MS || lockDurationInMs > SERVICE_BUS_MAX_LOCK_MS) {
    throw new UsageError(
      `${where} must be between 5 s and 5 min for a Service Bus queue (its LockDuration), got ${lockDurationInMs / 1000} s`,
    );
  }
}

/** Options of {@link openQueueAt}. */
export interface OpenQueueOptions {
  /** Lock (visibility) duration; for a Service Bus queue also the LockDuration it is created with. */
  lockDurationInMs: number;
  createIfMissing: boolean;
  /** Extra request policies of a Storage queue's client (the storage request metrics). */
  policies?: OpenStorageQueueOptions['policies'];
  /** Where a Service Bus queue counts its calls to the broker (`jobq_storage_requests_total`, `service="servicebus"`). */
  instruments?: Instruments;
}

/** A Service Bus queue as the CLI sees it: a task queue that can also describe itself (properties, dead-letter count). */
export interface DescribableQueue extends TaskQueue {
  describe(options?: OperationOptions): Promise<ServiceBusQueueDescription>;
}

export function isDescribable(queue: TaskQueue): queue is DescribableQueue {
  return typeof (queue as Partial<DescribableQueue>).describe === 'function';
}

/**
 * Opens the queue at `location`. A Service Bus queue is closed when the command ends (its
 * connection would keep the process alive); one that does not exist and is not to be created is
 * returned unopened, each use trying again (`not-found` until it exists), so commands that do not
 * touch it still work.
 */
export async function openQueueAt(location: QueueLocation, options: OpenQueueOptions): Promise<TaskQueue> {
  if (location.backend === 'storage') {
    return openStorageQueue({
      connection: withStorageCredential(location.connection),
      queueName: location.queueName,
      lockDurationInMs: options.lockDurationInMs,
      createIfMissing: options.createIfMissing,
      ...(options.policies && options.policies.length > 0 ? { policies: options.policies } : {}),
    });
  }
  const open = async (createIfMissing: boolean): Promise<DescribableQueue> => {
    // Loaded only here: commands that never reach Service Bus do not load its SDK.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS require keeps the load lazy (an import() would load it as ECMAScript)
    const { openServiceBusQueue } = require('@jobq/queue-servicebus') as typeof import('@jobq/queue-servicebus');
    const { access } = location;
    const adminPolicies = access.adminEndpoint === null ? [] : [(await loadLocalStack()).adminPolicy(access.adminEndpoint)];
    const queue = await openServiceBusQueue({
      connection: withServiceBusCredential(access.connection),
      queueName: location.queueName,
      lockDurationInMs: options.lockDurationInMs,
      createIfMissing,
      adminPolicies,
      ...(options.instruments?.enabled ? { instruments: options.instruments } : {}),
    });
    closeWhenDone(() => queue.close());
    return queue;
  };
  try {
    return await open(options.createIfMissing);
  } catch (error) {
    if (options.createIfMissing || !isJobqError(error, 'not-found')) throw error;
    return new DeferredQueue(location.queueName, options.lockDurationInMs, () => open(false));
  }
}

/** A queue opened on first use (and tried again on each use until it opens). */
export class DeferredQueue implements DescribableQueue {
  private opened: TaskQueue | null = null;
  private dlq: DeferredQueue | undefined;

  constructor(
    readonly name: string,
    private readonly configuredLockDurationInMs: number,
    private readonly open: () => Promise<TaskQueue>,
  ) {}

  get lockDurationInMs(): number {
    return this.opened?.lockDurationInMs ?? this.configuredLockDurationInMs;
  }

  get maxMessageBytes(): number {
    return this.opened?.maxMessageBytes ?? SERVICE_BUS_MAX_MESSAGE_BYTES - 4_096;
  }

  protected async target(): Promise<TaskQueue> {
    this.opened ??= await this.open();
    return this.opened;
  }

  async send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions): Promise<void> {
    return (await this.target()).send(messages, options);
  }
  async receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    return (await this.target()).receive(options);
  }
  async renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return (await this.target()).renewLock(message, options);
  }
  async complete(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return (await this.target()).complete(message, options);
  }
  async abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return (await this.target()).abandon(message, options);
  }
  async deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void> {
    return (await this.target()).deadLetter(message, reason, options);
  }
  async peek(maxMessages: number, options?: OperationOptions): Promise<PeekedMessage[]> {
    return (await this.target()).peek(maxMessages, options);
  }
  async approximateMessageCount(options?: OperationOptions): Promise<number> {
    return (await this.target()).approximateMessageCount(options);
  }
  async describe(options?: OperationOptions): Promise<ServiceBusQueueDescription> {
    const queue = await this.target();
    if (!isDescribable(queue)) throw new JobqError('invalid-argument', `queue "${this.name}" cannot describe itself`);
    return queue.describe(options);
  }
  deadLetterQueue(): TaskQueue {
    this.dlq ??= new DeferredQueue(`${this.name}/$DeadLetterQueue`, this.configuredLockDurationInMs, async () =>
      (await this.target()).deadLetterQueue(),
    );
    return this.dlq;
  }
  async close(): Promise<void> {
    await this.opened?.close();
  }
}
