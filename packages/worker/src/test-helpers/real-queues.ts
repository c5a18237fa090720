import { startAzurite, type LocalStorage } from '@jobq/local';
import type { TaskQueue } from '@jobq/ports';
import { openServiceBusQueue } from '@jobq/queue-servicebus';
import { openStorageQueue } from '@jobq/queue-storage';
import { adminPolicy, startServiceBus, type ServiceBusEmulator } from '@jobq/servicebus-emulator';

/** A queue of a test: a real adapter that can also be deleted. */
export type TestQueue = TaskQueue & { deleteQueue(): Promise<void> };

/**
 * A real queue service for the worker's tests: Storage Queues on Azurite, or Service Bus queues on
 * the in-process broker of @jobq/servicebus-emulator (locks down to 1 s, queues created with jobq's
 * settings). Call `start` in a `beforeAll` and `stop` in an `afterAll`.
 */
export interface RealQueueBackend {
  readonly kind: 'storage' | 'servicebus';
  /** For test titles. */
  readonly label: string;
  start(): Promise<void>;
  /** Deletes and closes every queue opened, then stops the service. */
  stop(): Promise<void>;
  /** A new queue of its own name. */
  open(lockDurationInMs?: number): Promise<TestQueue>;
  /** A second adapter on an existing queue, as another worker process has. */
  reopen(queueName: string, lockDurationInMs?: number): Promise<TestQueue>;
  /** The broker (Service Bus only). */
  readonly serviceBus: ServiceBusEmulator;
}

let queues = 0;

function backend(kind: RealQueueBackend['kind']): RealQueueBackend {
  let azurite: LocalStorage | undefined;
  let sb: ServiceBusEmulator | undefined;
  const opened: TestQueue[] = [];
  const created: TestQueue[] = [];
  const openNamed = async (queueName: string, lockDurationInMs: number): Promise<TestQueue> => {
    let queue: TestQueue;
    if (kind === 'servicebus') {
      if (!sb) throw new Error('the Service Bus broker is not started');
      queue = await openServiceBusQueue({
        connection: { connectionString: sb.connectionString },
        queueName,
        lockDurationInMs,
        createIfMissing: true,
        adminPolicies: [adminPolicy(sb.adminEndpoint!)],
      });
    } else {
      if (!azurite) throw new Error('Azurite is not started');
      queue = await openStorageQueue({ connection: { connectionString: azurite.connectionString }, queueName, lockDurationInMs });
    }
    opened.push(queue);
    return queue;
  };
  return {
    kind,
    label: kind === 'servicebus' ? 'Service Bus queues (in-process broker)' : 'Azure Storage Queues (Azurite)',
    async start() {
      if (kind === 'servicebus') sb = await startServiceBus({ lockDurationFloorMs: 1_000 });
      else azurite = await startAzurite();
    },
    async stop() {
      for (const queue of created.splice(0)) await queue.deleteQueue().catch(() => undefined);
      for (const queue of opened.splice(0)) await queue.close().catch(() => undefined);
      await sb?.stop();
      await azurite?.stop();
    },
    async open(lockDurationInMs = 2_000) {
      const queue = await openNamed(`worker-${process.pid}-${++queues}`, lockDurationInMs);
      created.push(queue);
      return queue;
    },
    reopen: (queueName, lockDurationInMs = 2_000) => openNamed(queueName, lockDurationInMs),
    get serviceBus() {
      if (kind !== 'servicebus' || !sb) throw new Error('no Service Bus broker on this backend');
      return sb;
    },
  };
}

/** Both real queue services, for `describe.each`. */
export function realQueueBackends(): RealQueueBackend[] {
  return [backend('storage'), backend('servicebus')];
}
