import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { startAzurite, type LocalStorage } from '@jobq/local';
import type { TaskQueue, WorkflowStore } from '@jobq/ports';
import { openServiceBusQueue } from '@jobq/queue-servicebus';
import { openStorageQueue } from '@jobq/queue-storage';
import { adminPolicy, startServiceBus, type ServiceBusEmulator } from '@jobq/servicebus-emulator';
import { openOutputStore, openWorkflowStore, type AzureOutputStore, type AzureWorkflowStore } from '@jobq/store-azure';
import {
  ShellProcessor,
  Worker,
  WorkflowProcessor,
  cancelCheckFromStore,
  type WorkerSummary,
  type WorkflowProcessorOptions,
} from '@jobq/worker';
import { Coordinator, WorkflowClient, type CoordinatorOptions, type SubmitOptions } from '../index';
import { taskNameOf, WrappedQueue, type StackSeams } from './wrappers';

// The end-to-end harness shared by the coordinator's test files: in-process Azurite, real queues
// (Storage Queues, or Service Bus queues on the in-process broker of @jobq/servicebus-emulator) and
// Azure stores, real workers running subprocesses, a WorkflowClient and a Coordinator. Every port
// handed to the coordinator and the workers can be wrapped (./wrappers) to inject failures; the
// failure tests open their stacks through ./failure-harness, with shorter locks.

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

/** Options of {@link openStack}. */
export interface StackOptions extends StackSeams<AzureWorkflowStore> {
  /** Where the completion and task queues live (default `storage`); the stores stay on Azurite. */
  queues?: QueueBackend;
  workers?: number;
  coordinator?: CoordinatorOptions;
  /** Start the coordinator at once (default true). */
  start?: boolean;
  /** Lock of the completion queue as the coordinator receives it (default 5 000 ms). */
  completionLockInMs?: number;
  /** Lock of the task queue as the workers receive it (default 5 000 ms). */
  taskLockInMs?: number;
  /**
   * Renew the coordinator lease this often (the lease then lasts 15 s, the shortest a blob lease
   * can): a broken lease is noticed within this time. Default: the store's (60 s, renewed every 15 s).
   */
  leaseRenewIntervalInMs?: number;
  /** How the workers' workflow processor runs commands (default: bash, as in production). */
  runCommand?: WorkflowProcessorOptions['runCommand'];
}

/** Ports of one coordinator that differ from the stack's (see {@link Stack.newCoordinator}). */
export interface CoordinatorPorts {
  /** Wraps the store this coordinator writes through (instead of the stack's `coordinatorStore`). */
  store?: (store: AzureWorkflowStore) => WorkflowStore;
  /** Wraps the completion queue this coordinator receives from (instead of the stack's `coordinatorCompletions`). */
  completions?: (queue: TaskQueue) => TaskQueue;
}

/** One running {@link Worker} of a stack. */
export interface WorkerHandle {
  readonly worker: Worker;
  /** Settles when `run()` does. */
  readonly done: Promise<WorkerSummary>;
  /** Stops it (default: at once, running tasks aborted and their messages given back) and waits for `run()`. */
  stop(gracePeriodInMs?: number): Promise<WorkerSummary>;
}

/** A worker of a stack running in a child process (see ./worker-process.cjs). */
export interface WorkerProcess {
  readonly pid: number;
  /** Its log lines so far. */
  readonly lines: string[];
  /** SIGKILL: the process settles nothing more and its locks run out. Resolves once it has exited. */
  kill(): Promise<void>;
}

/** One prefix's worth of engine: stores, queues, a worker, a client and a coordinator. */
export interface Stack {
  prefix: string;
  queues: QueueBackend;
  store: AzureWorkflowStore;
  outputs: AzureOutputStore;
  completions: TestQueue;
  taskQueue: TestQueue;
  client: WorkflowClient;
  coordinator: Coordinator;
  logs: string[];
  workerLogs: string[];
  /** Task messages the coordinator pushed (each send of each message), by task name. */
  pushed: Map<string, number>;
  /** The worker started with the stack. */
  worker: WorkerHandle;
  /** A second coordinator on the same ports (after `coordinator.stop()`, or with `breakLease`); `ports` overrides some of them. */
  newCoordinator(options?: CoordinatorOptions, ports?: CoordinatorPorts): Coordinator;
  /** Starts another worker on the stack's task queue (stopped after the test). */
  startWorker(numWorkers?: number): WorkerHandle;
  /** Starts a worker on the stack's queues in a child process, from the built packages; resolves once it receives (killed after the test). */
  spawnWorker(numWorkers?: number): Promise<WorkerProcess>;
  submit(definition: object, options?: SubmitOptions): Promise<string>;
  run(definition: object, options?: SubmitOptions, timeoutInMs?: number): Promise<WorkflowRuntime>;
  waitFor(workflowId: string, until: (runtime: WorkflowRuntime) => boolean, timeoutInMs?: number): Promise<WorkflowRuntime>;
}

/** Waits until `until()` holds, polling; throws `describe()` after the deadline. */
export async function waitUntil(until: () => boolean | Promise<boolean>, describe: () => string, timeoutInMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  while (!(await until())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${describe()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `promise`, or a rejection naming `what` after `timeoutInMs`. */
async function waitUntilSettled<T>(promise: Promise<T>, timeoutInMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutInMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

let stacks = 0;

/** A fresh prefix with its queues, stores, a running worker and a coordinator; torn down after the test. */
export async function openStack(h: Harness, options: StackOptions = {}): Promise<Stack> {
  stacks++;
  const prefix = `St${process.pid}x${Date.now().toString(36)}x${stacks}`;
  const connection = { connectionString: h.azurite.connectionString };
  const queues = options.queues ?? 'storage';
  const openQueue = (queueName: string, lockDurationInMs: number) => openTestQueue(h, queues, queueName, lockDurationInMs);
  const lease =
    options.leaseRenewIntervalInMs === undefined ? {} : { leaseDurationInMs: 15_000, renewIntervalInMs: options.leaseRenewIntervalInMs };
  const store = await openWorkflowStore({ connection, prefix, operationTimeoutInMs: 10_000, ...lease });
  h.dispose(() => store.deleteStorage());
  const outputs = await openOutputStore({ connection, prefix });
  const completions = await openQueue(store.names.completionQueue, options.completionLockInMs ?? 5_000);
  const taskQueue = await openQueue(`${prefix.toLowerCase()}-default`, options.taskLockInMs ?? 5_000);
  const logs: string[] = [];
  const workerLogs: string[] = [];
  const pushed = new Map<string, number>();
  const client = new WorkflowClient({ store, completions, outputsContainer: store.names.outputsContainer });

  const workerCompletions = options.workerCompletions ? options.workerCompletions(completions) : completions;
  const startWorker = (numWorkers = options.workers ?? 4): WorkerHandle => {
    const worker = new Worker({
      queue: taskQueue,
      numWorkers,
      receiveWaitInMs: 50,
      maxIdleBackoffInMs: 100,
      gracePeriodInMs: 0,
      log: (line) => workerLogs.push(line),
      processors: [
        new WorkflowProcessor({
          outputs,
          completions: workerCompletions,
          isCancelled: cancelCheckFromStore(store),
          env: {
            ...process.env,
            JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${prefix}`,
            JOBQ_STORAGE_CONNECTION_STRING: h.azurite.connectionString,
          },
          killTimeoutInMs: 2_000,
          completionBackoff: { initialInMs: 20, maxInMs: 100 },
          completionSendMaxAttempts: options.completionSendMaxAttempts ?? 5,
          cancelPollIntervalInMs: options.workerCancelPollIntervalInMs ?? 200,
          cancelPollJitter: 0,
          ...(options.runCommand ? { runCommand: options.runCommand } : {}),
        }),
        new ShellProcessor({ killTimeoutInMs: 2_000 }),
      ],
    });
    const done = worker.run();
    // Observed here so that a rejection is never unhandled; callers await `done` or `stop()`.
    void done.catch(() => undefined);
    const handle: WorkerHandle = {
      worker,
      done,
      stop: async (gracePeriodInMs = 0) => {
        await worker.stop({ gracePeriodInMs });
        return done;
      },
    };
    h.dispose(async () => {
      await handle.stop();
    });
    return handle;
  };
  const worker = startWorker();

  const spawnWorker = async (numWorkers = 1): Promise<WorkerProcess> => {
    const sb = queues === 'servicebus' ? await h.serviceBus() : null;
    const config = {
      queues,
      prefix,
      storageConnectionString: h.azurite.connectionString,
      serviceBusConnectionString: sb?.connectionString,
      serviceBusAdminEndpoint: sb?.adminEndpoint,
      completionQueue: completions.name,
      taskQueue: taskQueue.name,
      lockDurationInMs: options.taskLockInMs ?? 5_000,
      numWorkers,
    };
    const child = spawn(process.execPath, [join(__dirname, 'worker-process.cjs')], {
      env: { ...process.env, JOBQ_TEST_WORKER_CONFIG: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let stderr = '';
    let pending = '';
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        const complete = pending.split('\n');
        pending = complete.pop() ?? '';
        for (const line of complete) {
          if (line === 'ready') resolve();
          else lines.push(line);
        }
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.once('exit', (code, signal) =>
        reject(new Error(`the worker process ended before it was ready (${code ?? signal}; are the packages built?): ${stderr.trim()}`)),
      );
    });
    const kill = async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    };
    h.dispose(kill);
    await waitUntilSettled(ready, 20_000, 'the worker process to start');
    return { pid: child.pid!, lines, kill };
  };

  const counting = new WrappedQueue(taskQueue, {
    send: async (messages, send) => {
      await send();
      for (const m of messages) {
        const name = taskNameOf(m.body) ?? '?';
        pushed.set(name, (pushed.get(name) ?? 0) + 1);
      }
    },
  });
  const coordinatorTasks = options.coordinatorTasks ? options.coordinatorTasks(counting) : counting;
  const coordinatorStore = options.coordinatorStore ? options.coordinatorStore(store) : store;
  const coordinatorCompletions = options.coordinatorCompletions ? options.coordinatorCompletions(completions) : completions;
  const newCoordinator = (extra: CoordinatorOptions = {}, ports: CoordinatorPorts = {}) => {
    const coordinator = new Coordinator({
      store: ports.store ? ports.store(store) : coordinatorStore,
      completions: ports.completions ? ports.completions(completions) : coordinatorCompletions,
      outputs,
      queues: (spec) => {
        if (spec !== 'default') throw new Error(`no queue for spec "${spec}"`);
        return coordinatorTasks;
      },
      options: {
        receiveWaitInMs: 100,
        idleSleepInMs: 50,
        cancelPollIntervalInMs: 200,
        statsIntervalInMs: 500,
        log: (line) => logs.push(line),
        ...options.coordinator,
        ...extra,
      },
    });
    h.dispose(() => coordinator.stop());
    return coordinator;
  };
  const coordinator = newCoordinator();
  if (options.start ?? true) await coordinator.start();

  const waitFor = async (workflowId: string, until: (runtime: WorkflowRuntime) => boolean, timeoutInMs = 20_000) => {
    let last: WorkflowRuntime | undefined;
    await waitUntil(
      async () => {
        last = (await store.load(workflowId))?.runtime;
        return last !== undefined && until(last);
      },
      () => `${workflowId}: ${JSON.stringify(last?.tasks)}\n${logs.join('\n')}`,
      timeoutInMs,
    );
    if (!last) throw new Error('unreachable');
    return last;
  };
  const submit = async (definition: object, submitOptions: SubmitOptions = {}) => {
    const { workflowId } = await client.submit({ text: JSON.stringify(definition), filename: 'flow.json' }, submitOptions);
    return workflowId;
  };
  const run = async (definition: object, submitOptions: SubmitOptions = {}, timeoutInMs = 20_000) =>
    waitFor(await submit(definition, submitOptions), (r) => isTerminalWorkflowStatus(r.status), timeoutInMs);
  return {
    prefix,
    queues,
    store,
    outputs,
    completions,
    taskQueue,
    client,
    coordinator,
    logs,
    workerLogs,
    pushed,
    worker,
    newCoordinator,
    startWorker,
    spawnWorker,
    submit,
    run,
    waitFor,
  };
}
