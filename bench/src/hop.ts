/**
 * Hop latency and idle cost, with Azurite and the Service Bus emulator each in a child process:
 *   1. a chain of 50 no-op tasks (t0 → t1 → … → t49) run by a coordinator and a 2-slot worker as
 *      `jobq workflow run` runs them on the embedded stack (coordinator defaults, worker idle
 *      back-off capped at 1 s), several chains in turn; a hop is the time from a task's command
 *      returning to its child's command starting (output write, completion send, coordinator
 *      receive, reduce, push, save, worker receive): `hop latency p50/p90 ms`;
 *   2. one idle coordinator plus one idle 2-slot worker at their defaults (worker back-off up to
 *      30 s), after a workflow ended: every storage request they send for `IDLE_SECONDS`, as
 *      `idle storage transactions per minute`.
 * Both with the queues on Storage Queues (Azurite), then with the completion and task queues on the
 * Service Bus emulator (store on Azurite), where receives wait server-side: there the idle line
 * counts broker operations and receive calls besides the store's requests.
 * Plain text on stdout, progress on stderr. The labelled lines are listed in bench/README.md.
 *
 * Usage: node dist/hop.js [--chains=3] [--idle-seconds=20] [--backends=storage,servicebus]
 */
import { loadavg } from 'node:os';
import { Coordinator, WorkflowClient, type CoordinatorOptions } from '@jobq/coordinator';
import { startAzuriteProcess } from '@jobq/local';
import type { ReceiveOptions, TaskQueue } from '@jobq/ports';
import { openServiceBusQueue } from '@jobq/queue-servicebus';
import { countingPolicy, openStorageQueue } from '@jobq/queue-storage';
import { startServiceBusProcess, adminPolicy, type ServiceBusProcess } from '@jobq/servicebus-emulator';
import { openOutputStore, openWorkerRegistry, openWorkflowStore } from '@jobq/store-azure';
import {
  DEFAULT_HEARTBEAT_INTERVAL_IN_MS,
  Worker,
  WorkflowProcessor,
  cancelCheckFromStore,
  type ShellResult,
  type WorkerOptions,
} from '@jobq/worker';
import { billedOps, brokerOpsBetween } from './broker-ops';
import { failureText, median, percentile } from './report';
import { StoreTransactions } from './transactions';

const CHAIN = 50;
const SLOTS = 2;
let chains = 3;
let idleSeconds = 20;
let backends = new Set(['storage', 'servicebus']);
for (const arg of process.argv.slice(2)) {
  const [key, value] = arg.split('=');
  if (key === '--chains' && value && Number(value) >= 1) chains = Math.floor(Number(value));
  else if (key === '--idle-seconds' && value && Number(value) > 0) idleSeconds = Number(value);
  else if (key === '--backends' && value) backends = new Set(value.split(','));
  else {
    process.stderr.write(`hop bench: unknown argument "${arg}" (known: --chains=N, --idle-seconds=S, --backends=storage,servicebus)\n`);
    process.exit(2);
  }
}

const progress = (message: string) => process.stderr.write(`[hop bench] ${message}\n`);
const f = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');

const chainSource = (tag: string) => ({
  name: `hop-${tag}`,
  tasks: Array.from({ length: CHAIN }, (_, i) => ({
    name: `t${i}`,
    kwargs: { cmd: `: t${i}` },
    ...(i > 0 ? { depends_on: [`t${i - 1}`] } : {}),
  })),
});

/** Every storage request of one coordinator + worker pair (queues on Storage, or the store alone). */
class Requests {
  readonly store = new StoreTransactions();
  readonly outputs = new StoreTransactions();
  /** The heartbeat registry (`{PREFIX}Workers`): the worker's beats, the coordinator's prune. */
  readonly heartbeats = new StoreTransactions();
  readonly queues = countingPolicy();
  get total(): number {
    return this.store.total + this.outputs.total + this.heartbeats.total + this.queues.counter.total;
  }
  reset(): void {
    this.store.reset();
    this.outputs.reset();
    this.heartbeats.reset();
    this.queues.counter.reset();
  }
}

/** Counts the adapter's receive calls (what Service Bus bills, empty or not). */
function countReceives<Q extends TaskQueue>(queue: Q, count: { receives: number }): Q {
  const receive = queue.receive.bind(queue);
  queue.receive = (options: ReceiveOptions) => {
    count.receives++;
    return receive(options);
  };
  return queue;
}

interface Queues {
  completions: TaskQueue;
  tasks: TaskQueue;
  dispose(): Promise<void>;
}

type OpenQueues = (
  names: { completionQueue: string; taskQueue: string },
  requests: Requests,
  count: { receives: number },
) => Promise<Queues>;

const storageQueues =
  (connectionString: string): OpenQueues =>
  async (names, requests, count) => {
    const connection = { connectionString };
    const completions = countReceives(
      await openStorageQueue({ connection, queueName: names.completionQueue, policies: [requests.queues.policy] }),
      count,
    );
    const tasks = countReceives(
      await openStorageQueue({ connection, queueName: names.taskQueue, policies: [requests.queues.policy] }),
      count,
    );
    return {
      completions,
      tasks,
      dispose: async () => {
        await completions.deleteQueue().catch(() => undefined);
        await tasks.deleteQueue().catch(() => undefined);
      },
    };
  };

const serviceBusQueues =
  (broker: ServiceBusProcess): OpenQueues =>
  async (names, _requests, count) => {
    const open = async (queueName: string) =>
      countReceives(
        await openServiceBusQueue({
          connection: { connectionString: broker.connectionString },
          queueName,
          createIfMissing: true,
          ...(broker.adminEndpoint ? { adminPolicies: [adminPolicy(broker.adminEndpoint)] } : {}),
        }),
        count,
      );
    const completions = await open(names.completionQueue);
    const tasks = await open(names.taskQueue);
    return {
      completions,
      tasks,
      dispose: async () => {
        for (const q of [completions, tasks]) {
          await q.deleteQueue().catch(() => undefined);
          await q.close().catch(() => undefined);
        }
      },
    };
  };

const noOp = (): Promise<ShellResult> =>
  Promise.resolve({ exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null });

interface Pair {
  coordinator: Coordinator;
  worker: Worker;
  client: WorkflowClient;
  store: Awaited<ReturnType<typeof openWorkflowStore>>;
  requests: Requests;
  count: { receives: number };
  queueNames: string[];
  stop(): Promise<void>;
}

/** A coordinator and a 2-slot worker on a fresh prefix; `onCommand` sees each task's command start and end. */
async function openPair(
  connectionString: string,
  prefix: string,
  openQueues: OpenQueues,
  worker: Partial<WorkerOptions>,
  coordinator: CoordinatorOptions,
  onCommand: (command: string, phase: 'start' | 'end') => void,
): Promise<Pair> {
  const connection = { connectionString };
  const requests = new Requests();
  const count = { receives: 0 };
  const store = await openWorkflowStore({
    connection,
    prefix,
    blobPolicies: [requests.store.blobPolicy()],
    tablePolicies: [requests.store.tablePolicy()],
  });
  const outputs = await openOutputStore({ connection, prefix, blobPolicies: [requests.outputs.blobPolicy()] });
  // Heartbeats as `jobq worker` writes them (every 30 s), counted with the rest.
  const registry = await openWorkerRegistry({ connection, prefix, tablePolicies: [requests.heartbeats.tablePolicy()] });
  const names = { completionQueue: store.names.completionQueue, taskQueue: `${prefix.toLowerCase()}-default` };
  const queues = await openQueues(names, requests, count);
  const w = new Worker({
    queue: queues.tasks,
    numWorkers: SLOTS,
    gracePeriodInMs: 0,
    log: () => undefined,
    heartbeat: { registry, intervalInMs: DEFAULT_HEARTBEAT_INTERVAL_IN_MS, queueSpec: 'default', version: 'bench' },
    ...worker,
    processors: [
      new WorkflowProcessor({
        outputs,
        completions: queues.completions,
        isCancelled: cancelCheckFromStore(store),
        env: { ...process.env, JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${prefix}`, JOBQ_STORAGE_CONNECTION_STRING: connectionString },
        killTimeoutInMs: 2_000,
        runCommand: async (options) => {
          onCommand(options.command, 'start');
          const result = await noOp();
          onCommand(options.command, 'end');
          return result;
        },
      }),
    ],
  });
  const logs: string[] = [];
  const c = new Coordinator({
    store,
    completions: queues.completions,
    outputs,
    workers: registry,
    queues: () => queues.tasks,
    options: { ...coordinator, log: (line) => logs.push(line) },
  });
  const client = new WorkflowClient({ store, completions: queues.completions, outputsContainer: store.names.outputsContainer });
  const running = w.run();
  await c.start();
  return {
    coordinator: c,
    worker: w,
    client,
    store,
    requests,
    count,
    queueNames: [names.completionQueue, names.taskQueue],
    stop: async () => {
      await c.stop().catch(() => undefined);
      await w.stop({ gracePeriodInMs: 0 }).catch(() => undefined);
      await running.catch(() => undefined);
      await queues.dispose();
      await store.deleteStorage().catch(() => undefined);
    },
  };
}

async function waitFinished(pair: Pair, workflowId: string, timeoutInMs: number): Promise<string> {
  const deadline = Date.now() + timeoutInMs;
  for (;;) {
    const status = (await pair.store.getWorkflow(workflowId))?.status ?? 'missing';
    if (['completed', 'failed', 'cancelled'].includes(status)) return status;
    if (Date.now() > deadline) throw new Error(`workflow ${workflowId} still ${status} after ${timeoutInMs} ms`);
    await sleep(100);
  }
}

/** Hop latencies (ms) of `chains` 50-task chains run one after the other. */
async function hops(label: string, connectionString: string, openQueues: OpenQueues): Promise<number[]> {
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  const pair = await openPair(
    connectionString,
    `hop${label}${Date.now().toString(36)}`,
    openQueues,
    { maxIdleBackoffInMs: 1_000 },
    {},
    (command, phase) => (phase === 'start' ? starts : ends).set(command, performance.now()),
  );
  const all: number[] = [];
  try {
    for (let n = 0; n < chains; n++) {
      starts.clear();
      ends.clear();
      const { workflowId } = await pair.client.submit({ text: JSON.stringify(chainSource(`${n}`)), filename: 'chain.json' });
      const status = await waitFinished(pair, workflowId, 120_000);
      if (status !== 'completed') throw new Error(`chain ${n} ended ${status}`);
      for (let i = 1; i < CHAIN; i++) {
        const start = starts.get(`: t${i}`);
        const end = ends.get(`: t${i - 1}`);
        if (start !== undefined && end !== undefined) all.push(start - end);
      }
      progress(`${label}: chain ${n + 1}/${chains}: hop p50 ${f(median(all), 1)} ms`);
    }
  } finally {
    await pair.stop();
  }
  return all;
}

interface Idle {
  storage: number;
  /** Of `storage`, the Storage Queue requests (polls, sends, deletes). */
  queue: number;
  receives: number;
  brokerOps: number | null;
  seconds: number;
}

/** One coordinator + one worker at their defaults, idle after a one-task workflow ended. */
async function idle(label: string, connectionString: string, openQueues: OpenQueues, broker: ServiceBusProcess | null): Promise<Idle> {
  const pair = await openPair(connectionString, `idle${label}${Date.now().toString(36)}`, openQueues, {}, {}, () => undefined);
  try {
    const { workflowId } = await pair.client.submit({
      text: JSON.stringify({ name: 'idle', tasks: [{ name: 'only', kwargs: { cmd: 'true' } }] }),
      filename: 'idle.json',
    });
    await waitFinished(pair, workflowId, 60_000);
    await sleep(3_000); // past the fast polling that follows activity
    pair.requests.reset();
    pair.count.receives = 0;
    const before = broker ? await broker.stats() : null;
    const t0 = performance.now();
    await sleep(idleSeconds * 1_000);
    const seconds = (performance.now() - t0) / 1_000;
    const after = broker ? await broker.stats() : null;
    return {
      storage: pair.requests.total,
      queue: pair.requests.queues.counter.total,
      receives: pair.count.receives,
      brokerOps: before && after ? billedOps(brokerOpsBetween(before, after, pair.queueNames)) : null,
      seconds,
    };
  } finally {
    await pair.stop();
  }
}

async function main(): Promise<void> {
  const loadAtStart = load();
  progress('starting Azurite and the Service Bus emulator in child processes');
  const [azurite, sb] = await Promise.all([
    startAzuriteProcess(),
    backends.has('servicebus') ? startServiceBusProcess() : Promise.resolve(null),
  ]);
  try {
    process.stdout.write('jobq hop latency benchmark: a chain of no-op tasks, coordinator + 2-slot worker at library level\n');
    process.stdout.write(
      `node ${process.version}; Azurite 3.35.0 (patched) and the Service Bus emulator each in a child process; ${chains} chains of ${CHAIN} tasks (${chains * (CHAIN - 1)} hops)\n`,
    );
    process.stdout.write(`load average (1/5/15 min) at start: ${loadAtStart}\n`);
    const per = (n: number, s: number) => (n * 60) / s;
    if (backends.has('storage')) {
      const h = await hops('sq', azurite.connectionString, storageQueues(azurite.connectionString));
      process.stdout.write(`hop latency p50/p90 ms: ${f(median(h), 1)} / ${f(percentile(h, 90), 1)}\n`);
      progress(`idle coordinator + worker on Storage Queues for ${idleSeconds} s`);
      const i = await idle('sq', azurite.connectionString, storageQueues(azurite.connectionString), null);
      process.stdout.write(
        `idle storage transactions per minute: ${f(per(i.storage, i.seconds))} (one coordinator + one worker at their defaults; of them queue requests ${f(per(i.queue, i.seconds))}/min, from ${f(per(i.receives, i.seconds))} receive calls/min)\n`,
      );
    }
    if (sb) {
      const h = await hops('sb', azurite.connectionString, serviceBusQueues(sb));
      process.stdout.write(`hop latency p50/p90 ms, queues on Service Bus (emulator): ${f(median(h), 1)} / ${f(percentile(h, 90), 1)}\n`);
      progress(`idle coordinator + worker with queues on Service Bus for ${idleSeconds} s`);
      const i = await idle('sb', azurite.connectionString, serviceBusQueues(sb), sb);
      process.stdout.write(
        `idle broker operations per minute, queues on Service Bus (emulator): ${f(per(i.brokerOps ?? Number.NaN, i.seconds))} ` +
          `(receive calls ${f(per(i.receives, i.seconds))}/min; the store's storage transactions ${f(per(i.storage, i.seconds))}/min)\n`,
      );
    }
    process.stdout.write(`load average (1/5/15 min) at end: ${load()}\n`);
  } finally {
    await Promise.all([azurite.stop(), sb?.stop()]);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`hop bench failed: ${failureText(error)}\n`);
  process.exitCode = 1;
});
