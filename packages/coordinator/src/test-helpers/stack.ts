import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { startAzurite, type LocalStorage } from '@jobq/local';
import type { TaskQueue } from '@jobq/ports';
import { openServiceBusQueue } from '@jobq/queue-servicebus';
import { openStorageQueue } from '@jobq/queue-storage';
import { adminPolicy, startServiceBus, type ServiceBusEmulator } from '@jobq/servicebus-emulator';
import { openOutputStore, openWorkflowStore, type AzureOutputStore, type AzureWorkflowStore } from '@jobq/store-azure';
import { ShellProcessor, Worker, WorkflowProcessor, cancelCheckFromStore } from '@jobq/worker';
import { Coordinator, WorkflowClient, type CoordinatorOptions, type SubmitOptions } from '../index';

// The end-to-end harness shared by the coordinator's test files: in-process Azurite, real queues
// (Storage Queues, or Service Bus queues on the in-process broker of @jobq/servicebus-emulator) and
// Azure stores, real workers running subprocesses, a WorkflowClient and a Coordinator.

/** Where a stack's completion and task queues live; the stores and outputs are always on Azurite. */
export type QueueBackend = 'storage' | 'servicebus';

/** Per-file environment: call once at the top of a test file. */
export interface Harness {
  readonly azurite: LocalStorage;
  readonly work: string;
  /** The in-process Service Bus broker, started on first use (locks down to 1 s), stopped after the file. */
  serviceBus(): Promise<ServiceBusEmulator>;
  /** Registers a cleanup for the end of the current test (run in reverse order). */
  dispose(fn: () => Promise<void>): void;
}

export function useHarness(): Harness {
  let azurite: LocalStorage | undefined;
  let work: string | undefined;
  let serviceBus: Promise<ServiceBusEmulator> | undefined;
  let disposals: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    azurite = await startAzurite();
    work = await mkdtemp(join(tmpdir(), 'jobq-coord-test-'));
  });
  afterEach(async () => {
    const list = disposals.reverse();
    disposals = [];
    for (const dispose of list) await dispose().catch(() => undefined);
  });
  afterAll(async () => {
    await azurite?.stop();
    await (await serviceBus?.catch(() => undefined))?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });
  return {
    get azurite() {
      if (!azurite) throw new Error('Azurite is not started');
      return azurite;
    },
    get work() {
      if (!work) throw new Error('no work directory');
      return work;
    },
    serviceBus: () => (serviceBus ??= startServiceBus({ lockDurationFloorMs: 1_000 })),
    dispose: (fn) => disposals.push(fn),
  };
}

/** A queue of a test stack: a real adapter that can also be deleted. */
export type TestQueue = TaskQueue & { deleteQueue(): Promise<void> };

/**
 * Opens (creating it) the queue `queueName` on `backend`, with the given lock duration; deleted and
 * closed after the current test. Service Bus queues get jobq's settings (see the README of
 * @jobq/queue-servicebus) through the broker's admin endpoint.
 */
export async function openTestQueue(h: Harness, backend: QueueBackend, queueName: string, lockDurationInMs: number): Promise<TestQueue> {
  let queue: TestQueue;
  if (backend === 'servicebus') {
    const sb = await h.serviceBus();
    queue = await openServiceBusQueue({
      connection: { connectionString: sb.connectionString },
      queueName,
      lockDurationInMs,
      createIfMissing: true,
      adminPolicies: [adminPolicy(sb.adminEndpoint!)],
    });
  } else {
    queue = await openStorageQueue({ connection: { connectionString: h.azurite.connectionString }, queueName, lockDurationInMs });
  }
  h.dispose(async () => {
    await queue.deleteQueue();
    await queue.close();
  });
  return queue;
}

let stacks = 0;

/** Options of {@link openStack}. */
export interface StackOptions {
  workers?: number;
  coordinator?: CoordinatorOptions;
  /** Start the coordinator at once (default true). */
  start?: boolean;
  /** Where the completion and task queues live (default `storage`). */
  queues?: QueueBackend;
}

/** One prefix's worth of engine: stores, queues, a worker, a client and a coordinator. */
export interface Stack {
  prefix: string;
  store: AzureWorkflowStore;
  outputs: AzureOutputStore;
  completions: TaskQueue;
  client: WorkflowClient;
  coordinator: Coordinator;
  logs: string[];
  workerLogs: string[];
  /** Another coordinator on the same prefix (not started). */
  newCoordinator(options?: CoordinatorOptions): Coordinator;
  submit(definition: object, options?: SubmitOptions): Promise<string>;
  /** Runs a definition (as JSON) to a terminal status; returns the final runtime. */
  run(definition: object, options?: SubmitOptions, timeoutInMs?: number): Promise<WorkflowRuntime>;
  waitFor(workflowId: string, until: (runtime: WorkflowRuntime) => boolean, timeoutInMs?: number): Promise<WorkflowRuntime>;
}

/** A fresh prefix with its queues, stores, a running worker and a coordinator; torn down after the test. */
export async function openStack(h: Harness, options: StackOptions = {}): Promise<Stack> {
  stacks++;
  const prefix = `St${process.pid}x${Date.now().toString(36)}x${stacks}`;
  const connection = { connectionString: h.azurite.connectionString };
  const openQueue = (queueName: string) => openTestQueue(h, options.queues ?? 'storage', queueName, 5_000);
  const store = await openWorkflowStore({ connection, prefix, operationTimeoutInMs: 10_000 });
  h.dispose(() => store.deleteStorage());
  const outputs = await openOutputStore({ connection, prefix });
  const completions = await openQueue(store.names.completionQueue);
  const defaultQueue = await openQueue(`${prefix.toLowerCase()}-default`);
  const logs: string[] = [];
  const workerLogs: string[] = [];
  const client = new WorkflowClient({ store, completions, outputsContainer: store.names.outputsContainer });

  const worker = new Worker({
    queue: defaultQueue,
    numWorkers: options.workers ?? 4,
    receiveWaitInMs: 50,
    maxIdleBackoffInMs: 100,
    gracePeriodInMs: 0,
    log: (line) => workerLogs.push(line),
    processors: [
      new WorkflowProcessor({
        outputs,
        completions,
        isCancelled: cancelCheckFromStore(store),
        env: { ...process.env, JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${prefix}`, JOBQ_STORAGE_CONNECTION_STRING: h.azurite.connectionString },
        killTimeoutInMs: 2_000,
        completionBackoff: { initialInMs: 20, maxInMs: 100 },
        cancelPollIntervalInMs: 200,
        cancelPollJitter: 0,
      }),
      new ShellProcessor({ killTimeoutInMs: 2_000 }),
    ],
  });
  const running = worker.run();
  h.dispose(async () => {
    await worker.stop({ gracePeriodInMs: 0 });
    await running;
  });

  const newCoordinator = (coordinatorOptions: CoordinatorOptions = options.coordinator ?? {}): Coordinator => {
    const coordinator = new Coordinator({
      store,
      completions,
      outputs,
      queues: (spec) => {
        if (spec !== 'default') throw new Error(`no queue for spec "${spec}"`);
        return defaultQueue;
      },
      options: {
        receiveWaitInMs: 100,
        idleSleepInMs: 50,
        cancelPollIntervalInMs: 200,
        statsIntervalInMs: 500,
        log: (line) => logs.push(line),
        ...coordinatorOptions,
      },
    });
    h.dispose(() => coordinator.stop());
    return coordinator;
  };
  const coordinator = newCoordinator();
  if (options.start ?? true) await coordinator.start();

  const waitFor = async (workflowId: string, until: (runtime: WorkflowRuntime) => boolean, timeoutInMs = 20_000) => {
    const deadline = Date.now() + timeoutInMs;
    for (;;) {
      const loaded = await store.load(workflowId);
      if (loaded && until(loaded.runtime)) return loaded.runtime;
      if (Date.now() > deadline) {
        const tasks = loaded ? Object.entries(loaded.runtime.tasks).filter(([, t]) => t.status !== 'completed') : [];
        throw new Error(`timed out waiting for ${workflowId}: ${JSON.stringify(tasks.slice(0, 20))}\n${logs.join('\n')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const submit = async (definition: object, submitOptions: SubmitOptions = {}) => {
    const { workflowId } = await client.submit({ text: JSON.stringify(definition), filename: 'flow.json' }, submitOptions);
    return workflowId;
  };
  const run = async (definition: object, submitOptions: SubmitOptions = {}, timeoutInMs = 20_000) =>
    waitFor(await submit(definition, submitOptions), (r) => isTerminalWorkflowStatus(r.status), timeoutInMs);
  return { prefix, store, outputs, completions, client, coordinator, logs, workerLogs, newCoordinator, submit, run, waitFor };
}
