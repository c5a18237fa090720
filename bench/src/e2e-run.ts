/**
 * One workflow end to end against a storage account (Azurite in the benches): a coordinator and an
 * in-process worker whose storage requests are all counted, from submit to the index row reading a
 * terminal status. Used by the seed bench (1 000 tasks), the scale bench (100 000 tasks) and the
 * Service Bus queue bench (the same run with its completion and task queues on Service Bus).
 */
import { Coordinator, WorkflowClient } from '@jobq/coordinator';
import { countingPolicy, openStorageQueue, type TransactionCounter } from '@jobq/queue-storage';
import {
  openOutputStore,
  openWorkerRegistry,
  openWorkflowStore,
  type AzureWorkflowStore,
  type OpenWorkflowStoreOptions,
  type TablePipelinePolicy,
} from '@jobq/store-azure';
import {
  DEFAULT_HEARTBEAT_INTERVAL_IN_MS,
  ShellProcessor,
  Worker,
  WorkflowProcessor,
  cancelCheckFromStore,
  type RunShellOptions,
  type ShellResult,
} from '@jobq/worker';
import { noopInstruments, type Instruments, type TaskQueue } from '@jobq/ports';
import type { OpenStorageQueueOptions } from '@jobq/queue-storage';
import { StoreTransactions } from './transactions';
import { RequestTap, type StoragePolicies } from './storage-latency';

/** The completion and task queues of a run on another backend than the account's Storage Queues. */
export interface RunQueues {
  completions: TaskQueue;
  taskQueue: TaskQueue;
  /** The coordinator's own clients of the same queues (default: it shares the two above). */
  coordinatorCompletions?: TaskQueue;
  coordinatorTaskQueue?: TaskQueue;
  /**
   * A client of the completion queue outside the run (uncounted, no policies): when given, the run
   * ends only once it is empty too, i.e. the coordinator has deleted every completion.
   */
  observedCompletions?: TaskQueue;
  /** Called once the queues and stores are open, just before the run starts (counting starts here). */
  startCounting?(): Promise<void>;
  /** Called once the run ended, before the coordinator and the worker stop (counting ends here). */
  stopCounting?(): Promise<void>;
  /** Deletes the queues and closes them. */
  dispose(): Promise<void>;
}

export interface EndToEndOptions {
  connectionString: string;
  prefix: string;
  /** The workflow as submitted (raw JSON object); several are submitted at once, and the run ends when all have. */
  source: object | readonly object[];
  /** Submitted with `--max-fan-in` this wide (default: as written). */
  maxFanIn?: number;
  /** Worker slots. */
  slots: number;
  /** Run every task as a real `bash -c` process (default: an in-process no-op). */
  subprocesses?: boolean;
  timeoutInMs: number;
  log: (line: string) => void;
  /** Called every `sampleEveryInMs` with the seconds since start and the completions applied so far. */
  onSample?: (seconds: number, applied: number) => void;
  sampleEveryInMs?: number;
  /**
   * Opens the completion queue (`completionQueue`, the store's name for it) and the `default` task
   * queue elsewhere, e.g. on Service Bus (default: Storage Queues on the account, counted).
   */
  openQueues?: (names: { completionQueue: string; taskQueue: string }) => Promise<RunQueues>;
  /**
   * Extra policies on every storage client of the coordinator, the worker and the client (not on
   * the observer polling for the end), e.g. `delayPolicies` for a run under network latency.
   */
  policies?: readonly StoragePolicies[];
  /** Another process's CPU time in ms (e.g. Azurite's), read at the start and the end of the run. */
  otherCpuMs?: () => number;
  /** Lines each in-process no-op task prints (default 0: silent, so it leaves no task log). */
  taskLines?: number;
  /** The worker's heartbeat interval (default 30 s, as `jobq worker`); its registry's requests are counted apart. */
  heartbeatIntervalInMs?: number;
  /** Where the coordinator and the worker record their metrics (default nowhere), and `metricsPolicies` the requests. */
  instruments?: Instruments;
  /** Request policies recording into `instruments` (the CLI's `storageRequestPolicies`), on every client of the run. */
  metricsPolicies?: { blob: BlobPolicy[]; table: TablePipelinePolicy[]; queue: QueuePolicy[] };
}

type BlobPolicy = NonNullable<OpenWorkflowStoreOptions['blobPolicies']>[number];
type QueuePolicy = NonNullable<OpenStorageQueueOptions['policies']>[number];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const seconds = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

export async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, timeoutInMs: number, everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The coordinator settings of the benches: short receive waits, a scan every second. */
export const coordinatorOptions = (logs: string[]) => ({
  receiveWaitInMs: 100,
  idleSleepInMs: 50,
  cancelPollIntervalInMs: 1_000,
  statsIntervalInMs: 10_000,
  log: (line: string) => logs.push(line),
});

export interface EndToEndResult {
  seconds: number;
  status: string;
  /** Requests to the Storage Queues; null when the queues came from `openQueues`. */
  taskQueueTx: TransactionCounter | null;
  completionQueueTx: TransactionCounter | null;
  store: { blob: number; table: number };
  /** Output store blobs: outputs and task logs. */
  outputsBlob: number;
  /** Table requests of the worker heartbeat registry (`{PREFIX}Workers`) in the run. */
  heartbeats: number;
  /** The same over the worker's whole life: its first beat, the run, and the delete of its row at stop. */
  heartbeatsLifetime: number;
  applied: number;
  saves: number;
  batches: number;
  /** CPU ms of this process (coordinator, worker, client, observer) from start to end. */
  cpuMs: number;
  /** CPU ms of `otherCpuMs` over the same window; null without it. */
  otherCpuMs: number | null;
  /** Storage requests the coordinator made (its loop and its timers), and its round trips (see `RequestTap`). */
  coordinatorRequests: number;
  coordinatorRoundTrips: number;
}

/** A task that does nothing (but print `lines` lines), in-process: what the engine costs without process start-up. */
const noOpCommand =
  (lines: number) =>
  (options: RunShellOptions): Promise<ShellResult> => {
    for (let i = 0; i < lines; i++) options.onLine?.('stdout', `line ${i + 1} of the task`);
    return Promise.resolve({ exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null });
  };

/** End to end with a coordinator and an in-process worker; all their storage requests counted. */
export async function endToEnd(options: EndToEndOptions): Promise<EndToEndResult> {
  const { connectionString, prefix, subprocesses = false, slots, log } = options;
  const connection = { connectionString };
  const storeTx = new StoreTransactions();
  const outputsTx = new StoreTransactions();
  const heartbeatTx = new StoreTransactions();
  const coordinatorRegistryTx = new StoreTransactions();
  const metrics = options.metricsPolicies ?? { blob: [], table: [], queue: [] };
  const instruments = options.instruments ?? noopInstruments;
  // The coordinator has clients of its own (as in production, where it is a process of its own),
  // and only those carry the tap: first (outermost), so a request is in flight while it is delayed.
  const tap = new RequestTap();
  const extra = options.policies ?? [];
  const coordinatorExtra = [tap.policies, ...extra];
  const openStore = (policies: readonly StoragePolicies[]) =>
    openWorkflowStore({
      connection,
      prefix,
      blobPolicies: [storeTx.blobPolicy(), ...metrics.blob, ...policies.map((p) => p.blob())],
      tablePolicies: [storeTx.tablePolicy(), ...metrics.table, ...policies.map((p) => p.table())],
    });
  const store = await openStore(extra);
  const coordinatorStore = await openStore(coordinatorExtra);
  const outputs = await openOutputStore({
    connection,
    prefix,
    blobPolicies: [outputsTx.blobPolicy(), ...metrics.blob, ...extra.map((p) => p.blob())],
  });
  // The worker's heartbeats, counted apart: every table request of its registry. The coordinator
  // has its own (it prunes old rows at start and hourly).
  const openRegistry = (counter: StoreTransactions, policies: readonly StoragePolicies[]) =>
    openWorkerRegistry({ connection, prefix, tablePolicies: [counter.tablePolicy(), ...metrics.table, ...policies.map((p) => p.table())] });
  const registry = await openRegistry(heartbeatTx, extra);
  const coordinatorRegistry = await openRegistry(coordinatorRegistryTx, coordinatorExtra);
  heartbeatTx.reset(); // the table creation
  // An observer of its own (not counted): reads the index row at the end.
  const observer: AzureWorkflowStore = await openWorkflowStore({ connection, prefix, createIfMissing: false });
  const tq = countingPolicy();
  const cq = countingPolicy();
  const names = { completionQueue: store.names.completionQueue, taskQueue: `${prefix.toLowerCase()}-default` };
  const queues: RunQueues = options.openQueues
    ? await options.openQueues(names)
    : await (async () => {
        const open = (queueName: string, counter: ReturnType<typeof countingPolicy>, policies: readonly StoragePolicies[]) =>
          openStorageQueue({
            connection,
            queueName,
            lockDurationInMs: 60_000,
            policies: [counter.policy, ...metrics.queue, ...policies.map((p) => p.queue())],
          });
        const completions = await open(names.completionQueue, cq, extra);
        const taskQueue = await open(names.taskQueue, tq, extra);
        return {
          completions,
          taskQueue,
          coordinatorCompletions: await open(names.completionQueue, cq, coordinatorExtra),
          coordinatorTaskQueue: await open(names.taskQueue, tq, coordinatorExtra),
          // Not counted, no policies: tells when every completion is deleted.
          observedCompletions: await openStorageQueue({ connection, queueName: names.completionQueue, lockDurationInMs: 60_000 }),
          dispose: async () => {
            await completions.deleteQueue().catch(() => undefined);
            await taskQueue.deleteQueue().catch(() => undefined);
          },
        };
      })();
  const { completions, taskQueue } = queues;
  const logs: string[] = [];
  // The coordinator logs "workflow ID: completed" (or failed, cancelled) as it makes the final
  // save; the index row is then read until it says so too: no polling while the run goes on.
  let finishedLines = 0;
  const worker = new Worker({
    queue: taskQueue,
    numWorkers: slots,
    receiveWaitInMs: 50,
    maxIdleBackoffInMs: 100,
    gracePeriodInMs: 0,
    log: () => undefined,
    taskLines: () => undefined,
    instruments,
    queueLabel: 'default',
    heartbeat: {
      registry,
      intervalInMs: options.heartbeatIntervalInMs ?? DEFAULT_HEARTBEAT_INTERVAL_IN_MS,
      queueSpec: 'default',
      version: 'bench',
    },
    processors: [
      new WorkflowProcessor({
        outputs,
        completions,
        isCancelled: cancelCheckFromStore(store),
        env: { ...process.env, JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${prefix}`, JOBQ_STORAGE_CONNECTION_STRING: connectionString },
        killTimeoutInMs: 2_000,
        completionBackoff: { initialInMs: 20, maxInMs: 100 },
        ...(subprocesses ? {} : { runCommand: noOpCommand(options.taskLines ?? 0) }),
      }),
      new ShellProcessor({ killTimeoutInMs: 2_000 }),
    ],
  });
  const coordinatorTasks = queues.coordinatorTaskQueue ?? taskQueue;
  const coordinator = new Coordinator({
    store: coordinatorStore,
    completions: queues.coordinatorCompletions ?? completions,
    outputs,
    workers: coordinatorRegistry,
    queues: (spec) => {
      if (spec !== 'default') throw new Error(`no queue ${spec}`);
      return coordinatorTasks;
    },
    options: {
      ...coordinatorOptions(logs),
      instruments,
      log: (line: string) => {
        logs.push(line);
        if (/^workflow \S+: (completed|failed|cancelled)$/.test(line)) finishedLines++;
      },
    },
  });
  let running: Promise<unknown> | null = null;
  try {
    const client = new WorkflowClient({ store, completions, outputsContainer: store.names.outputsContainer });
    // Opening the queues/stores (create-if-missing) and starting the coordinator (its lease) and
    // the worker are not part of the run: a deployment has them running when a workflow comes.
    log(`starting coordinator + worker (${slots} slots)`);
    running = worker.run();
    await coordinator.start();
    // The worker's first beat (sent as it starts) is not part of the run; later ones are.
    await waitUntil('the first heartbeat', () => heartbeatTx.table >= 1, 30_000);
    tq.counter.reset();
    cq.counter.reset();
    storeTx.reset();
    outputsTx.reset();
    tap.reset();
    const heartbeats0 = heartbeatTx.table;
    coordinatorRegistryTx.reset();
    await queues.startCounting?.();
    log('submitting');
    const other0 = options.otherCpuMs?.() ?? 0;
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const sources = Array.isArray(options.source) ? (options.source as readonly object[]) : [options.source];
    const submitOptions = options.maxFanIn === undefined ? {} : { maxFanIn: options.maxFanIn };
    const workflowIds = (
      await Promise.all(sources.map((source) => client.submit({ text: JSON.stringify(source), filename: 'workflow.json' }, submitOptions)))
    ).map((r) => r.workflowId);
    const open = new Set(workflowIds);
    let status = 'pending';
    let lastLog = Date.now();
    let lastSample = Date.now();
    let lastRead = Date.now();
    await waitUntil(
      'workflow completed',
      async () => {
        if (Date.now() - lastLog > 5_000) {
          lastLog = Date.now();
          log(`running, ${coordinator.counters.completionsApplied} completions applied`);
        }
        if (options.onSample && Date.now() - lastSample >= (options.sampleEveryInMs ?? 1_000)) {
          lastSample = Date.now();
          options.onSample(seconds(t0), coordinator.counters.completionsApplied);
        }
        // The index rows once every end was logged (and once a second, should no line come).
        if (finishedLines < workflowIds.length && Date.now() - lastRead < 1_000) return false;
        lastRead = Date.now();
        for (const workflowId of [...open]) {
          const summary = await observer.getWorkflow(workflowId);
          const now = summary?.status ?? 'missing';
          if (!['completed', 'failed', 'cancelled'].includes(now)) return false;
          // The run's status: the first end that is not "completed", else "completed".
          if (status === 'pending' || status === 'completed') status = now;
          open.delete(workflowId);
        }
        return true;
      },
      options.timeoutInMs,
      5,
    );
    // And every completion deleted (the ceiling deletes all of its own before it ends).
    const observed = queues.observedCompletions;
    if (observed)
      await waitUntil('every completion deleted', async () => (await observed.approximateMessageCount()) === 0, options.timeoutInMs, 5);
    const s = seconds(t0);
    const cpu = process.cpuUsage(cpu0);
    const otherCpuMs = options.otherCpuMs ? options.otherCpuMs() - other0 : null;
    const coordinatorRequests = tap.requests;
    const coordinatorRoundTrips = tap.roundTrips;
    await queues.stopCounting?.();
    const result: EndToEndResult = {
      seconds: s,
      status,
      taskQueueTx: options.openQueues ? null : { ...tq.counter, byMethod: { ...tq.counter.byMethod } },
      completionQueueTx: options.openQueues ? null : { ...cq.counter, byMethod: { ...cq.counter.byMethod } },
      store: { blob: storeTx.blob, table: storeTx.table },
      outputsBlob: outputsTx.blob,
      heartbeats: heartbeatTx.table - heartbeats0 + coordinatorRegistryTx.table,
      heartbeatsLifetime: 0,
      applied: coordinator.counters.completionsApplied,
      saves: coordinator.counters.saves,
      batches: coordinator.counters.batches,
      cpuMs: (cpu.user + cpu.system) / 1000,
      otherCpuMs,
      coordinatorRequests,
      coordinatorRoundTrips,
    };
    if (logs.length > 0) log(`coordinator log lines: ${logs.length} (last: ${logs[logs.length - 1]})`);
    // The worker's whole life: its first beat, the run, the delete of its row as it stops.
    await worker.stop({ gracePeriodInMs: 0 });
    await running;
    result.heartbeatsLifetime = heartbeatTx.table;
    return result;
  } finally {
    await coordinator.stop().catch(() => undefined);
    await worker.stop({ gracePeriodInMs: 0 }).catch(() => undefined);
    if (running) await running.catch(() => undefined);
    await queues.dispose().catch(() => undefined);
    await store.deleteStorage().catch(() => undefined);
  }
}
