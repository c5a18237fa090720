/**
 * Service Bus against Storage Queues through jobq's own adapters (`@jobq/queue-servicebus`,
 * `@jobq/queue-storage`), in one run, with Azurite and the Service Bus emulator each in a child
 * process (and a real namespace as an extra column when `JOBQ_BENCH_SERVICEBUS_CONNECTION_STRING`
 * is set):
 *   1. the seed shape end to end with its completion and task queues on Service Bus (store on
 *      Azurite): broker operations, messages and dedup drops per task beside the run's storage
 *      transactions per task;
 *   2. 3 200 messages sent 16 in flight, then received 32 at a time and completed, 1 and 4 receivers;
 *   3. seed-shape tasks/s on both backends (median of three runs each, interleaved);
 *   4. idle pickup latency: a receive(32) waiting on an empty queue, one message sent;
 *   5. one `receiveMessages(32)` SDK call against the adapter's two-step receive, with 1 and 32
 *      messages waiting.
 * Plain text on stdout, progress on stderr. The labelled lines are listed in bench/README.md.
 *
 * Usage: node dist/servicebus-queues.js [--runs=3] [--parts=e2e,throughput,pickup,receive]
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { ServiceBusClient } from '@azure/service-bus';
import { startAzuriteProcess } from '@jobq/local';
import { errorMessage, mapLimit, type OutgoingMessage, type TaskQueue } from '@jobq/ports';
import { openServiceBusQueue, type AdminPolicy } from '@jobq/queue-servicebus';
import { openStorageQueue } from '@jobq/queue-storage';
import { adminPolicy, startServiceBusProcess, type ServiceBusProcess, type ServiceBusStats } from '@jobq/servicebus-emulator';
import { addBrokerOps, billedOps, brokerOpsBetween, type BrokerOps } from './broker-ops';
import { endToEnd, type EndToEndResult, type RunQueues } from './e2e-run';
import { failureText, median, percentile, table } from './report';
import { TASKS, seedSource } from './seed-shape';

const SLOTS = 32;
const MESSAGES = 3_200;
const SENDS_IN_FLIGHT = 16;
const PICKUP_ROUNDS = 50;
const RECEIVE_ROUNDS = 5;
const NAMESPACE_VARIABLE = 'JOBQ_BENCH_SERVICEBUS_CONNECTION_STRING';

let runs = 3;
let parts = new Set(['e2e', 'throughput', 'pickup', 'receive']);
for (const arg of process.argv.slice(2)) {
  const [key, value] = arg.split('=');
  if (key === '--runs' && value && Number(value) >= 1) runs = Math.floor(Number(value));
  else if (key === '--parts' && value) parts = new Set(value.split(','));
  else {
    process.stderr.write(`servicebus-queues bench: unknown argument "${arg}" (known: --runs=N, --parts=e2e,throughput,pickup,receive)\n`);
    process.exit(2);
  }
}

function progress(message: string): void {
  process.stderr.write(`[sb queues bench] ${message}\n`);
}

const f = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits, useGrouping: false })
    : 'n/a';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ms = (t0: number) => performance.now() - t0;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');

/** Counts the administration client's HTTP requests (queue properties, counts, create, delete). */
class AdminRequests {
  count = 0;
  readonly policy: AdminPolicy = {
    name: 'bench-admin-request-counter',
    sendRequest: (request, next) => {
      this.count++;
      return next(request);
    },
  };
}

/** A queue of the bench, with the way to delete it. */
type BenchQueue = TaskQueue & { deleteQueue(): Promise<void> };

/** One column of the tables: Storage Queues on Azurite, the emulator, or a real namespace. */
interface Backend {
  label: string;
  /** Opens (creating when missing) a queue; `name` is made unique to this run by the backend. */
  open(name: string): Promise<BenchQueue>;
  /** Service Bus only: the connection string for raw SDK clients, and the queue name `open` used. */
  raw?: { connectionString: string; queueName(name: string): string };
  /** The emulator only: its counters. */
  stats?(): Promise<ServiceBusStats>;
  admin?: AdminRequests;
  /** The e2e run's queues (Service Bus); storage runs use the account's Storage Queues. */
  runQueues?(names: { completionQueue: string; taskQueue: string }, counted: (ops: BrokerOps, admin: number) => void): Promise<RunQueues>;
}

function storageBackend(connectionString: string): Backend {
  return {
    label: 'storage (Azurite)',
    open: (name) => openStorageQueue({ connection: { connectionString }, queueName: `sq-${name}`, lockDurationInMs: 60_000 }),
  };
}

function serviceBusBackend(label: string, connectionString: string, namePrefix: string, broker: ServiceBusProcess | null): Backend {
  const admin = new AdminRequests();
  const policies = broker?.adminEndpoint ? [adminPolicy(broker.adminEndpoint), admin.policy] : [admin.policy];
  const queueName = (name: string) => `${namePrefix}${name}`;
  const openNamed = async (fullName: string): Promise<BenchQueue> => {
    const queue = await openServiceBusQueue({
      connection: { connectionString },
      queueName: fullName,
      lockDurationInMs: 60_000,
      createIfMissing: true,
      adminPolicies: policies,
    });
    const deleteQueue = queue.deleteQueue.bind(queue);
    // Deleting also closes: the queue holds a share of the pooled client.
    return Object.assign(queue, {
      deleteQueue: async () => {
        await deleteQueue().catch(() => undefined);
        await queue.close();
      },
    });
  };
  const backend: Backend = {
    label,
    open: (name) => openNamed(queueName(name)),
    raw: { connectionString, queueName },
    admin,
    async runQueues(names, counted) {
      const completionQueue = queueName(names.completionQueue);
      const taskQueue = queueName(names.taskQueue);
      const completions = await openNamed(completionQueue);
      const tasks = await openNamed(taskQueue);
      // Its count requests go around the counting policy: it tells when every completion is settled.
      const observed = await openServiceBusQueue({
        connection: { connectionString },
        queueName: completionQueue,
        lockDurationInMs: 60_000,
        createIfMissing: false,
        adminPolicies: broker?.adminEndpoint ? [adminPolicy(broker.adminEndpoint)] : [],
      });
      let before: ServiceBusStats | undefined;
      return {
        completions,
        taskQueue: tasks,
        observedCompletions: observed,
        startCounting: async () => {
          before = broker ? await broker.stats() : undefined;
          admin.count = 0;
        },
        stopCounting: async () => {
          const adminRequests = admin.count;
          const after = broker ? await broker.stats() : undefined;
          const none: BrokerOps = {
            transfers: NaN,
            deliveries: NaN,
            dispositions: NaN,
            renewals: NaN,
            management: NaN,
            messagesIn: NaN,
            dedupDrops: NaN,
          };
          counted(before && after ? brokerOpsBetween(before, after, [completionQueue, taskQueue]) : none, adminRequests);
        },
        dispose: async () => {
          await observed.close();
          await completions.deleteQueue();
          await tasks.deleteQueue();
        },
      };
    },
  };
  if (broker) backend.stats = () => broker.stats();
  return backend;
}

const envelope = (id: string) => JSON.stringify({ version: 1, id, kwargs: '{"cmd":"true"}', num_retries: 0 });
const outgoing = (tag: string, i: number): OutgoingMessage => ({ body: envelope(`${tag}/t${i}/1`), messageId: `${tag}/t${i}/1` });

// ---------------------------------------------------------------------------------------------
// 1 + 3: the seed shape end to end

interface E2eRun {
  result: EndToEndResult;
  ops: BrokerOps | null;
  adminRequests: number;
}

async function seedRun(backend: Backend, azuriteConnectionString: string, prefix: string): Promise<E2eRun> {
  let ops: BrokerOps | null = null;
  let adminRequests = 0;
  const result = await endToEnd({
    connectionString: azuriteConnectionString,
    prefix,
    source: seedSource(),
    slots: SLOTS,
    timeoutInMs: 180_000,
    log: (line) => progress(`e2e ${backend.label}: ${line}`),
    ...(backend.runQueues
      ? {
          openQueues: (names: { completionQueue: string; taskQueue: string }) =>
            backend.runQueues!(names, (counted, admin) => {
              ops = counted;
              adminRequests = admin;
            }),
        }
      : {}),
  });
  if (result.status !== 'completed') throw new Error(`the seed run on ${backend.label} ended ${result.status}`);
  return { result, ops, adminRequests };
}

/** Storage requests of the run besides its queues: workflow store, output store, heartbeat registry. */
const storeTx = (r: EndToEndResult) => r.store.blob + r.store.table + r.outputsBlob + r.heartbeats;
const queueTx = (r: EndToEndResult) => (r.taskQueueTx?.total ?? 0) + (r.completionQueueTx?.total ?? 0);

async function seedRuns(backends: readonly Backend[], azurite: string): Promise<Map<Backend, E2eRun[]>> {
  const out = new Map<Backend, E2eRun[]>(backends.map((b) => [b, []]));
  // Interleaved, so a busy spell of the machine falls on every backend alike.
  for (let run = 1; run <= runs; run++) {
    for (const [i, backend] of backends.entries()) {
      progress(`e2e run ${run}/${runs} on ${backend.label}`);
      out.get(backend)!.push(await seedRun(backend, azurite, `SbSeed${run}b${i}`));
    }
  }
  return out;
}

function printSeed(results: Map<Backend, E2eRun[]>): void {
  const backends = [...results.keys()];
  const rate = (b: Backend) => median(results.get(b)!.map((r) => TASKS / r.result.seconds));
  const n = (b: Backend) => results.get(b)!.length * TASKS;
  process.stdout.write(
    `\n1 and 3. Seed shape end to end (${TASKS} no-op tasks, coordinator + in-process worker of ${SLOTS} slots; store on Azurite; ${runs} runs per backend, interleaved)\n`,
  );
  const rows: string[][] = [
    ['tasks/s (median)', ...backends.map((b) => f(rate(b)))],
    [
      'tasks/s (each run)',
      ...backends.map((b) =>
        results
          .get(b)!
          .map((r) => f(TASKS / r.result.seconds))
          .join(' '),
      ),
    ],
  ];
  const opRow = (label: string, value: (ops: BrokerOps) => number) => [
    label,
    ...backends.map((b) => {
      const runsOf = results.get(b)!;
      if (!b.runQueues) return '-';
      const ops = addBrokerOps(runsOf.map((r) => r.ops!));
      return f(value(ops) / n(b), 2);
    }),
  ];
  rows.push(opRow('broker: transfers per task', (o) => o.transfers));
  rows.push(opRow('broker: deliveries per task', (o) => o.deliveries));
  rows.push(opRow('broker: dispositions per task', (o) => o.dispositions));
  rows.push(opRow('broker: management ops per task', (o) => o.management));
  rows.push(opRow('broker: renewals per task', (o) => o.renewals));
  rows.push(opRow('broker: messages per task', (o) => o.messagesIn));
  rows.push(opRow('broker: dedup drops per task', (o) => o.dedupDrops));
  rows.push([
    'admin (HTTP) requests per task',
    ...backends.map((b) => (b.runQueues ? f(results.get(b)!.reduce((t, r) => t + r.adminRequests, 0) / n(b), 3) : '-')),
  ]);
  rows.push([
    'storage: queue transactions per task',
    ...backends.map((b) => f(results.get(b)!.reduce((t, r) => t + queueTx(r.result), 0) / n(b), 2)),
  ]);
  rows.push([
    'storage: store transactions per task',
    ...backends.map((b) => f(results.get(b)!.reduce((t, r) => t + storeTx(r.result), 0) / n(b), 2)),
  ]);
  process.stdout.write(`${table(['', ...backends.map((b) => b.label)], rows)}\n`);
  process.stdout.write(
    "   Per-task figures are totals over the runs / (runs x 1 000). Broker counters are the emulator's stats() of the run's two queues;\n",
  );
  process.stdout.write(
    '   a real namespace has no such counters (n/a). Store transactions: workflow store blobs and tables, output blobs.\n',
  );

  const storage = backends.find((b) => !b.runQueues);
  const broker = backends.find((b) => b.stats);
  if (broker) {
    const ops = addBrokerOps(results.get(broker)!.map((r) => r.ops!));
    const total = n(broker);
    const sbRuns = results.get(broker)!;
    process.stdout.write(
      `broker operations per task: ${f(billedOps(ops) / total, 2)} + ${f(ops.renewals / total, 2)} renewals ` +
        `(transfers ${f(ops.transfers / total, 2)}, deliveries ${f(ops.deliveries / total, 2)}, dispositions ${f(ops.dispositions / total, 2)}, management ${f(ops.management / total, 2)}; goal ≤ 6 + renewals)\n`,
    );
    process.stdout.write(
      `storage transactions per task beside it: ${f(sbRuns.reduce((t, r) => t + storeTx(r.result), 0) / total, 2)} (store only; its queues are on Service Bus)\n`,
    );
    process.stdout.write(`messages per task: ${f(ops.messagesIn / total, 2)}; dedup drops: ${ops.dedupDrops} in ${sbRuns.length} runs\n`);
  }
  if (storage) {
    const total = n(storage);
    const all = results.get(storage)!.reduce((t, r) => t + queueTx(r.result) + storeTx(r.result), 0);
    process.stdout.write(`storage-queue run, storage transactions per task: ${f(all / total, 2)} (queues and store)\n`);
  }
  for (const b of backends)
    if (b !== storage && storage)
      process.stdout.write(
        `${b.stats ? 'servicebus/storage e2e ratio' : 'namespace/storage e2e ratio'}: ${f(rate(b) / rate(storage), 2)}\n`,
      );
}

// ---------------------------------------------------------------------------------------------
// 2: throughput through the adapters

interface Throughput {
  sendRate: number;
  receiveRate: number;
  received: number;
}

/** 3 200 single-message sends, 16 in flight; then `receivers` adapters (one link each) drain it, 32 per receive. */
async function throughput(backend: Backend, receivers: number): Promise<Throughput> {
  const tag = `tp${receivers}-${randomUUID().slice(0, 8)}`;
  const queues = [await backend.open(tag)];
  for (let i = 1; i < receivers; i++) queues.push(await backend.open(tag));
  const first = queues[0]!;
  try {
    await first.send(outgoing(`${tag}-warm`, 0));
    let t0 = performance.now();
    await mapLimit(
      Array.from({ length: MESSAGES }, (_, i) => i),
      SENDS_IN_FLIGHT,
      (i) => first.send(outgoing(tag, i)),
    );
    const sendRate = MESSAGES / (ms(t0) / 1000);
    const expected = MESSAGES + 1;
    let received = 0;
    let lastAt = 0;
    t0 = performance.now();
    await Promise.all(
      queues.map(async (queue) => {
        let empty = 0;
        while (received < expected && empty < 3) {
          const batch = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 500 });
          if (batch.length === 0) {
            empty++;
            continue;
          }
          empty = 0;
          await Promise.all(batch.map((m) => queue.complete(m)));
          received += batch.length;
          if (received >= expected) lastAt = performance.now();
        }
      }),
    );
    // The drain ends with the last completion, not with the other receivers' last empty waits.
    return { sendRate, receiveRate: received / (((lastAt || performance.now()) - t0) / 1000), received };
  } finally {
    for (const queue of queues.slice(1)) await queue.close().catch(() => undefined);
    await first.deleteQueue().catch(() => undefined);
    await first.close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// 4: idle pickup latency

/**
 * One round on every backend at once: each has a receive(32, wait 10 s) on its empty queue; after
 * 1–2 s (past the Storage Queue adapter's 1 s poll cap) one message is sent; the time from the send
 * call to the receive returning.
 */
async function pickup(backends: readonly Backend[]): Promise<Map<Backend, number[]>> {
  const queues = await Promise.all(backends.map((b) => b.open(`pickup-${randomUUID().slice(0, 8)}`)));
  const times = new Map<Backend, number[]>(backends.map((b) => [b, []]));
  try {
    for (let round = 0; round < PICKUP_ROUNDS; round++) {
      const idle = 1_000 + Math.random() * 1_000;
      await Promise.all(
        backends.map(async (backend, i) => {
          const queue = queues[i]!;
          const receiving = queue.receive({ maxMessages: 32, maxWaitTimeInMs: 10_000 });
          await sleep(idle);
          const t0 = performance.now();
          await queue.send(outgoing(`pickup-${round}`, i));
          const got = await receiving;
          const elapsed = ms(t0);
          if (got.length === 0) throw new Error(`pickup on ${backend.label}: the message did not arrive within 10 s`);
          times.get(backend)!.push(elapsed);
          await Promise.all(got.map((m) => queue.complete(m)));
        }),
      );
    }
  } finally {
    for (const queue of queues) await queue.deleteQueue().catch(() => undefined);
    for (const queue of queues) await queue.close().catch(() => undefined);
  }
  return times;
}

// ---------------------------------------------------------------------------------------------
// 5: receiveMessages(32) vs the two-step receive

interface ReceiveLatency {
  raw: number[];
  twoStep: number[];
  rawGot: number[];
  twoStepGot: number[];
}

/** The latency of one receive of up to 32 when `waiting` messages are in the queue. */
async function receiveLatency(backend: Backend, waiting: number): Promise<ReceiveLatency> {
  const raw = backend.raw!;
  const out: ReceiveLatency = { raw: [], twoStep: [], rawGot: [], twoStepGot: [] };
  const tag = `recv${waiting}-${randomUUID().slice(0, 8)}`;
  const adapterQueue = await backend.open(`${tag}-a`);
  const rawQueue = await backend.open(`${tag}-r`);
  const client = new ServiceBusClient(raw.connectionString);
  const receiver = client.createReceiver(raw.queueName(`${tag}-r`), { maxAutoLockRenewalDurationInMs: 0, skipParsingBodyAsJson: true });
  try {
    for (let round = 0; round < RECEIVE_ROUNDS; round++) {
      const batch = Array.from({ length: waiting }, (_, i) => outgoing(`${tag}-${round}`, i));
      await rawQueue.send(batch);
      let t0 = performance.now();
      const got = await receiver.receiveMessages(32, { maxWaitTimeInMs: 5_000 });
      out.raw.push(ms(t0));
      out.rawGot.push(got.length);
      await Promise.all(got.map((m) => receiver.completeMessage(m)));
      // Whatever the call left behind is taken now, so each round starts with `waiting` messages.
      for (let left = waiting - got.length; left > 0;) {
        const more = await receiver.receiveMessages(left, { maxWaitTimeInMs: 1_000 });
        if (more.length === 0) break;
        await Promise.all(more.map((m) => receiver.completeMessage(m)));
        left -= more.length;
      }

      await adapterQueue.send(batch);
      t0 = performance.now();
      const mine = await adapterQueue.receive({ maxMessages: 32, maxWaitTimeInMs: 5_000 });
      out.twoStep.push(ms(t0));
      out.twoStepGot.push(mine.length);
      await Promise.all(mine.map((m) => adapterQueue.complete(m)));
      for (let left = waiting - mine.length; left > 0;) {
        const more = await adapterQueue.receive({ maxMessages: left, maxWaitTimeInMs: 1_000 });
        if (more.length === 0) break;
        await Promise.all(more.map((m) => adapterQueue.complete(m)));
        left -= more.length;
      }
    }
  } finally {
    await receiver.close().catch(() => undefined);
    await client.close().catch(() => undefined);
    await adapterQueue.deleteQueue().catch(() => undefined);
    await rawQueue.deleteQueue().catch(() => undefined);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

async function part<T>(name: string, run: () => Promise<T>): Promise<T | null> {
  if (!parts.has(name)) return null;
  try {
    return await run();
  } catch (error) {
    progress(`${name} failed: ${failureText(error)}`);
    return null;
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const loadAtStart = load();
  progress('starting Azurite and the Service Bus emulator in child processes');
  const [azurite, sb] = await Promise.all([startAzuriteProcess(), startServiceBusProcess()]);
  const backends: Backend[] = [
    storageBackend(azurite.connectionString),
    serviceBusBackend('servicebus (emulator)', sb.connectionString, '', sb),
  ];
  const namespace = process.env[NAMESPACE_VARIABLE];
  if (namespace) backends.push(serviceBusBackend('servicebus (namespace)', namespace, `jobqbench-${randomUUID().slice(0, 8)}-`, null));
  const sbBackends = backends.filter((b) => b.raw);
  try {
    process.stdout.write('jobq Service Bus vs Storage Queue benchmark, through @jobq/queue-servicebus and @jobq/queue-storage\n');
    process.stdout.write(
      `node ${process.version}; Azurite 3.35.0 (patched) and the Service Bus emulator each in a child process. Emulator figures are not Azure's.\n`,
    );
    process.stdout.write(
      namespace
        ? 'real Service Bus namespace: included (the "servicebus (namespace)" column; its queues are created and deleted by this run)\n'
        : `real Service Bus namespace: skipped (${NAMESPACE_VARIABLE} not set)\n`,
    );
    process.stdout.write(`load average (1/5/15 min) at start: ${loadAtStart}\n`);

    const seed = await part('e2e', () => seedRuns(backends, azurite.connectionString));
    if (seed) printSeed(seed);

    const tp = await part('throughput', async () => {
      const rows: string[][] = [];
      for (const backend of backends) {
        for (const receivers of [1, 4]) {
          progress(`throughput on ${backend.label}, ${receivers} receiver(s)`);
          const r = await throughput(backend, receivers);
          rows.push([backend.label, String(receivers), f(r.sendRate), f(r.receiveRate), String(r.received - 1)]);
        }
      }
      return rows;
    });
    if (tp) {
      process.stdout.write(
        `\n2. Throughput through the adapters (${MESSAGES} messages of ~80 bytes, single-message sends ${SENDS_IN_FLIGHT} in flight; receive 32 per call + complete each; one run)\n`,
      );
      process.stdout.write(`${table(['backend', 'receivers', 'send msg/s', 'receive+complete msg/s', 'received'], tp)}\n`);
      process.stdout.write(
        '   Each receiver is an adapter of its own (its own receiver link on the one shared connection; one adapter takes its receives in turn).\n',
      );
    }

    const pickups = await part('pickup', () => {
      progress(`idle pickup latency, ${PICKUP_ROUNDS} rounds`);
      return pickup(backends);
    });
    if (pickups) {
      process.stdout.write(
        `\n4. Idle pickup latency (receive(32) with a 10 s wait on an empty queue, idle 1–2 s; from the send call to the receive returning; ${PICKUP_ROUNDS} rounds, backends side by side)\n`,
      );
      for (const [backend, times] of pickups)
        process.stdout.write(`idle pickup latency ${backend.label}: p50 ${f(median(times))} ms, p99 ${f(percentile(times, 99))} ms\n`);
      process.stdout.write(
        '   Storage Queues have no long polling: the adapter polls every 10 ms for 1 s after a message, then with back-off doubling to 1 s. The Service Bus figure\n',
      );
      process.stdout.write(
        "   includes the adapter's fill wait after the first message (about two round trips of the link, at most 50 ms; see 5).\n",
      );
    }

    const receives = await part('receive', async () => {
      const lines: string[] = [];
      for (const backend of sbBackends) {
        for (const waiting of [1, 32]) {
          progress(`receive latency on ${backend.label}, ${waiting} waiting`);
          const r = await receiveLatency(backend, waiting);
          lines.push(
            `receive latency ${backend.label}, ${waiting} waiting: receiveMessages(32) ${f(median(r.raw))} ms (got ${f(median(r.rawGot))}), ` +
              `two-step ${f(median(r.twoStep))} ms (got ${f(median(r.twoStepGot))})`,
          );
        }
      }
      return lines;
    });
    if (receives) {
      process.stdout.write(
        `\n5. One receiveMessages(32) SDK call vs the adapter's receive(32): receiveMessages(1, wait) then receiveMessages(31, fill wait ≤ 50 ms) (median of ${RECEIVE_ROUNDS}; "got" = messages returned)\n`,
      );
      for (const line of receives) process.stdout.write(`${line}\n`);
    }

    process.stdout.write(`\nload average (1/5/15 min) at end: ${load()}\n`);
    process.stdout.write(`Total Service Bus queue bench time ${f((Date.now() - started) / 1000, 1)} s.\n`);
  } finally {
    await Promise.all([azurite.stop(), sb.stop()]);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`servicebus-queues bench failed: ${errorMessage(error)}\n`);
  process.exitCode = 1;
});
