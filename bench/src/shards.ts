/**
 * Sharding benchmark (docs/sharding.md). Three parts (`--parts=model,azurite,balance`):
 *
 *  - model: a discrete-event model of n shard runners (n = 1, 2, 4, 8, 16), each the real
 *    `Coordinator` bound to its shard, on the in-memory store, output store and queues of
 *    `@jobq/memory` (16 index partitions: a workflow's shard is `shardOf(id, n)`), all on one
 *    `VirtualClock`. The runners are stepped one batch at a time with `runOnce()`: the runner whose
 *    virtual time is earliest steps next, and its time moves on by the JS CPU its step measured plus
 *    the client CPU of each storage request it made (an input, measured on Azurite below). Each
 *    queue passes at most 2 000 messages/s (a step waits for its queue), and an optional account
 *    limit (20 000 requests/s) serves every request of every runner and worker in turn. Workers are
 *    instant: after each step every task that runner pushed completes at once, its completion sent
 *    to the queue of `shardOf(workflow, n)`. Workload: n × 128 seeded 100-task workflows.
 *  - azurite: the model's input (client CPU per storage request, measured as `sdk-overhead.ts`
 *    part 2 does) and a real one-shard run of the same workflows on Azurite (coordinator and a
 *    32-slot in-process worker, `e2e-run.ts`), printed beside the model's n = 1 on them.
 *  - balance: 3 sharded coordinator processes (`shards-member.ts`: the real `AzureOwnershipStore`,
 *    `ShardBalancer` and shard runners; 8 shards, 15 s lease, 1 s interval) on Azurite: rebalance
 *    time when a member joins, balancing requests per minute per member, takeover time after a
 *    SIGTERM (shards released) and after a SIGKILL (leases and the member record left to run out).
 *
 * Usage: node dist/shards.js [--parts=model,azurite,balance] [--workflows=128] [--azurite-workflows=32]
 *        [--request-cpu-us=X]
 * (`--workflows` per shard in the model; `--azurite-workflows` of the real run, whose figure is
 * printed beside the model's on the same workflows; `--request-cpu-us` skips its measurement.)
 * Figures on stdout, progress on stderr.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { shardOf } from '@jobq/dag-core';
import { decodeEnvelope, decodeWorkflowTask, encodeCompletion } from '@jobq/dag-core/wire';
import { Coordinator, WorkflowClient } from '@jobq/coordinator';
import { startAzuriteProcess, type AzuriteProcess } from '@jobq/local';
import { MemoryOutputStore, MemoryOwnershipDeployment, MemoryOwnershipStore, MemoryTaskQueue, MemoryWorkflowStore } from '@jobq/memory';
import { shardCompletionQueue, VirtualClock, type ShardCount, type TaskQueue, type WorkflowStore } from '@jobq/ports';
import { openStorageQueue } from '@jobq/queue-storage';
import { accountClients } from '@jobq/store-azure';
import { endToEnd } from './e2e-run';
import { median, table } from './report';

const SHARD_COUNTS: readonly ShardCount[] = [1, 2, 4, 8, 16];
const QUEUE_MSG_PER_S = 2_000;
const ACCOUNT_REQ_PER_S = 20_000;
const TASKS_PER_WORKFLOW = 100;
/** A limit's unused capacity of this long can be spent at once (rates are per second). */
const BUCKET_MS = 1_000;

let parts = new Set(['model', 'azurite', 'balance']);
let workflowsPerShard = 128;
let realWorkflows = 32;
let requestCpuUsArg: number | null = null;
for (const arg of process.argv.slice(2)) {
  const [key, value = ''] = arg.split('=');
  if (key === '--parts') parts = new Set(value.split(','));
  else if (key === '--workflows') workflowsPerShard = Math.max(1, Number(value));
  else if (key === '--azurite-workflows') realWorkflows = Math.max(1, Number(value));
  else if (key === '--request-cpu-us') requestCpuUsArg = Number(value);
  else throw new Error(`unknown argument ${arg}; see the usage at the top of src/shards.ts`);
}

function log(line: string): void {
  process.stderr.write(`[shards] ${line}\n`);
}

const f = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');

// ---- the workload ---------------------------------------------------------------------------------

/** A seeded 100-task workflow: 10 layers of 10 tasks, each task after 1–3 tasks of the layer above (an LCG picks them). */
function workflowDefinition(seed: number): object {
  let state = (seed * 2_654_435_761 + 1) >>> 0;
  const next = () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
  const tasks: object[] = [];
  for (let layer = 0; layer < 10; layer++) {
    for (let i = 0; i < 10; i++) {
      const parents = new Set<string>();
      if (layer > 0) {
        const count = 1 + Math.floor(next() * 3);
        while (parents.size < count) parents.add(`t${layer - 1}_${Math.floor(next() * 10)}`);
      }
      tasks.push({ name: `t${layer}_${i}`, ...(parents.size > 0 ? { depends_on: [...parents] } : {}), kwargs: { cmd: ':' } });
    }
  }
  return { name: `bench-${seed}`, tasks };
}

// ---- the model ------------------------------------------------------------------------------------

interface ModelInputs {
  /** Client CPU per storage request, µs. */
  requestCpuUs: number;
  /** Charge the measured JS time of each step (false: CPU cost 0). */
  jsTime: boolean;
  /** One account serving every request at this rate (null: no account limit). */
  accountReqPerS: number | null;
}

interface ModelResult {
  shards: number;
  completions: number;
  /** Completions per second of virtual time, all shards (the last shard's end). */
  rate: number;
  /** Per shard: completions/s over its own run. */
  shardRates: number[];
  /** Per shard: its workflows (ids hash to shards, so they differ). */
  shardWorkflows: number[];
  /** CPU µs per completion charged to the runners: JS, and storage requests. */
  jsUs: number;
  requestUs: number;
  /** Storage requests per completion: runners and workers. */
  requestsPerTask: number;
  /** Wall time the simulation took. */
  wallS: number;
}

/** Counts the storage requests a call stands for on Azure (see the README's "Sharding benchmark"). */
function storeRequests(method: string, args: unknown[]): number {
  if (method === 'save') return 2; // runtime blob write + index-row merge (task rows deferred)
  if (method === 'writeTaskRows') return Math.max(1, Math.ceil(((args[1] as readonly string[] | undefined)?.length ?? 0) / 100));
  return 1;
}

function countedStore(store: MemoryWorkflowStore, bill: (n: number) => void): WorkflowStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        bill(storeRequests(String(key), args));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A queue whose requests are billed: one per receive call, per message sent (a Storage Queue send is one message), per delete. */
function countedQueue(queue: MemoryTaskQueue, bill: (n: number) => void, sent?: (n: number) => void): TaskQueue {
  return new Proxy(queue, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || key === 'constructor') return value;
      return (...args: unknown[]) => {
        if (key === 'send') {
          const n = Array.isArray(args[0]) ? args[0].length : 1;
          bill(n);
          sent?.(n);
        } else bill(1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** One worker step: every task message waiting on `tasks` completes at once; each completion goes to its shard's queue. Returns the requests made. */
async function instantWorker(tasks: MemoryTaskQueue, completions: readonly MemoryTaskQueue[], n: ShardCount): Promise<number> {
  let requests = 0;
  for (;;) {
    const batch = await tasks.receive({ maxMessages: 32, maxWaitTimeInMs: 0 });
    requests++;
    if (batch.length === 0) return requests;
    for (const message of batch) {
      const envelope = decodeEnvelope(message.body);
      if (!envelope.ok) throw new Error(envelope.error);
      const info = decodeWorkflowTask(envelope.value.kwargs);
      if (!info.ok || info.value === null) throw new Error('not a workflow task');
      const { workflowId, taskName, attemptNo } = info.value;
      await completions[shardOf(workflowId, n)]!.send({
        body: encodeCompletion({ workflowId, taskName, attemptNo, success: true, outputRef: null, error: null }),
      });
      await tasks.complete(message);
      requests += 2;
    }
  }
}

const cpuUs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

async function simulate(n: ShardCount, workflows: number, inputs: ModelInputs): Promise<ModelResult> {
  const wall0 = performance.now();
  const clock = new VirtualClock();
  const outputs = new MemoryOutputStore({ outputsContainer: 'sim-outputs', workflowsContainer: 'sim-workflows' });
  const store = new MemoryWorkflowStore({ stateBlobs: outputs });
  const deployment = new MemoryOwnershipDeployment(clock);
  const ownership = new MemoryOwnershipStore({ deployment });
  await ownership.ensureManifest(n);
  const completions = Array.from(
    { length: n },
    (_, k) => new MemoryTaskQueue({ name: shardCompletionQueue('sim-workflow-completions', k), lockDurationInMs: 600_000, clock }),
  );
  const taskQueues = Array.from({ length: n }, (_, k) => new MemoryTaskQueue({ name: `sim-tasks-${k}`, lockDurationInMs: 600_000, clock }));

  // The workload, submitted before the clock starts (each wake-up to its shard's queue).
  const expected = new Array<number>(n).fill(0);
  const clients = completions.map((queue) => new WorkflowClient({ store, completions: queue, outputsContainer: outputs.outputsContainer }));
  for (let i = 0; i < workflows; i++) {
    const id = `wf-${i.toString(16).padStart(6, '0')}`;
    const k = shardOf(id, n);
    expected[k]! += TASKS_PER_WORKFLOW;
    await clients[k]!.submit({ text: JSON.stringify(workflowDefinition(i)), filename: 'bench.json' }, { id });
  }

  let requests = 0;
  const bill = (count: number) => {
    requests += count;
  };
  const pushed = new Array<number>(n).fill(0);
  const runners: Coordinator[] = [];
  for (let k = 0; k < n; k++) {
    const claim = (await ownership.claim(k, 'sim'))!;
    const tasks = countedQueue(taskQueues[k]!, bill, (count) => (pushed[k]! += count));
    runners.push(
      new Coordinator({
        store: countedStore(store, bill),
        completions: countedQueue(completions[k]!, bill),
        outputs,
        queues: () => tasks,
        shard: { index: k, count: n, claim },
        options: { clock, log: () => undefined },
      }),
    );
  }

  const start = clock.now();
  const readyAt = new Array<number>(n).fill(start);
  const finishedAt = new Array<number | null>(n).fill(null);
  const queueFreeAt = new Array<number>(n).fill(start);
  const taskQueueFreeAt = new Array<number>(n).fill(start);
  let accountFreeAt = start;
  let jsUs = 0;
  let requestUs = 0;
  let workerRequests = 0;
  const msPerMessage = 1_000 / QUEUE_MSG_PER_S;
  for (let k = 0; k < n; k++) if (expected[k] === 0) finishedAt[k] = start;
  for (;;) {
    let k = -1;
    for (let i = 0; i < n; i++) if (finishedAt[i] === null && (k < 0 || readyAt[i]! < readyAt[k]!)) k = i;
    if (k < 0) break;
    const t = readyAt[k]!;
    await clock.advanceTo(t);
    const requests0 = requests;
    const pushed0 = pushed[k]!;
    const cpu0 = process.cpuUsage();
    const got = await runners[k]!.runOnce();
    const stepJsUs = inputs.jsTime ? cpuUs(cpu0) : 0;
    const stepRequests = requests - requests0;
    const stepWorkerRequests = await instantWorker(taskQueues[k]!, completions, n);
    workerRequests += stepWorkerRequests;
    jsUs += stepJsUs;
    requestUs += stepRequests * inputs.requestCpuUs;
    let next = t + (stepJsUs + stepRequests * inputs.requestCpuUs) / 1_000;
    // Each limit is a server with a one-second bucket: what it did not use in the last second can
    // be spent at once; beyond that the step waits until the limit has served it.
    const serve = (freeAt: number, ms: number) => Math.max(freeAt, t - BUCKET_MS) + ms;
    if (got > 0) {
      queueFreeAt[k] = serve(queueFreeAt[k]!, got * msPerMessage);
      next = Math.max(next, queueFreeAt[k]!);
    }
    const pushes = pushed[k]! - pushed0;
    if (pushes > 0) {
      taskQueueFreeAt[k] = serve(taskQueueFreeAt[k]!, pushes * msPerMessage);
      next = Math.max(next, taskQueueFreeAt[k]!);
    }
    if (inputs.accountReqPerS !== null) {
      accountFreeAt = serve(accountFreeAt, ((stepRequests + stepWorkerRequests) * 1_000) / inputs.accountReqPerS);
      next = Math.max(next, accountFreeAt);
    }
    if (runners[k]!.counters.completionsApplied >= expected[k]!) finishedAt[k] = next;
    // Idle (a turn that found nothing): the next look one millisecond later.
    readyAt[k] = got > 0 ? next : Math.max(next, t + 1);
  }
  for (const runner of runners) await runner.stop();
  const total = expected.reduce((a, b) => a + b, 0);
  const applied = runners.reduce((a, r) => a + r.counters.completionsApplied, 0);
  if (applied !== total) throw new Error(`model with ${n} shards: ${applied} completions applied, ${total} expected`);
  const end = Math.max(...finishedAt.map((x) => x ?? start));
  return {
    shards: n,
    completions: total,
    rate: total / ((end - start) / 1_000),
    shardRates: expected.map((e, k) => (e === 0 ? Number.NaN : e / ((finishedAt[k]! - start) / 1_000))),
    shardWorkflows: expected.map((e) => e / TASKS_PER_WORKFLOW),
    jsUs: jsUs / total,
    requestUs: requestUs / total,
    requestsPerTask: (requests + workerRequests) / total,
    wallS: (performance.now() - wall0) / 1_000,
  };
}

async function modelRuns(label: string, counts: readonly ShardCount[], inputs: ModelInputs): Promise<Map<number, ModelResult>> {
  const out = new Map<number, ModelResult>();
  for (const n of counts) {
    log(`model (${label}): ${n} shard(s), ${n * workflowsPerShard} workflows`);
    const result = await simulate(n, n * workflowsPerShard, inputs);
    log(`  ${f(result.rate)} completions/s in ${f(result.wallS, 1)} s of wall time`);
    out.set(n, result);
  }
  return out;
}

// ---- Azurite: the model's input and the real one-shard run -----------------------------------------

/** Client CPU µs per request (jobq's clients, 8 in flight, Azurite in a child process): median of 5 rounds, per operation. */
async function requestCpu(azurite: AzuriteProcess): Promise<{ perOp: Record<string, number>; mean: number }> {
  const connectionString = azurite.connectionString;
  const clients = accountClients({ connectionString }, { operationTimeoutInMs: 30_000 });
  const container = clients.container('shardbench');
  await container.createIfNotExists();
  const rows = clients.table('shardbench');
  await rows.createTable().catch(() => undefined);
  const queue = await openStorageQueue({ connection: { connectionString }, queueName: 'shardbench-cpu' });
  const blob = container.getBlockBlobClient('wf/runtime.log');
  const body = Buffer.from(JSON.stringify({ tasks: Array.from({ length: 20 }, (_, i) => ({ name: `t${i}`, state: 'done' })) }));
  const message = JSON.stringify({ v: 1, id: 'wf/t0/1', kind: 'completion', exit_code: 0, outputs: {} });
  const ops: Record<string, (i: number) => Promise<unknown>> = {
    'queue send': () => queue.send({ body: message }),
    'blob upload': () => blob.upload(body, body.length),
    'table merge': (i) => rows.upsertEntity({ partitionKey: 'wf', rowKey: `t${i % 100}`, state: 'done' }, 'Merge'),
  };
  const perCall = async (op: (i: number) => Promise<unknown>, count: number) => {
    let next = 0;
    const cpu0 = process.cpuUsage();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < count) await op(next++);
      }),
    );
    return cpuUs(cpu0) / count;
  };
  const perOp: Record<string, number> = {};
  for (const [name, op] of Object.entries(ops)) {
    await perCall(op, 100);
    const rounds: number[] = [];
    for (let r = 0; r < 5; r++) rounds.push(await perCall(op, 200));
    perOp[name] = median(rounds);
  }
  await queue.deleteQueue().catch(() => undefined);
  const values = Object.values(perOp);
  return { perOp, mean: values.reduce((a, b) => a + b, 0) / values.length };
}

// ---- balancing: sharded coordinator processes on Azurite ------------------------------------------

interface Member {
  id: string;
  child: ChildProcess;
  /** Held shards and when they last changed (the child's Date.now()). */
  held: number[];
  changedAt: number;
  readyAt: number;
  requests: number;
  exited: Promise<void>;
}

function startMember(id: string, azurite: AzuriteProcess, prefix: string, shards: number): Promise<Member> {
  const child = spawn(process.execPath, [join(__dirname, 'shards-member.js'), id], {
    env: {
      ...process.env,
      JOBQ_BENCH_CONNECTION_STRING: azurite.connectionString,
      JOBQ_BENCH_PREFIX: prefix,
      JOBQ_BENCH_SHARDS: String(shards),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const member: Member = {
    id,
    child,
    held: [],
    changedAt: 0,
    readyAt: 0,
    requests: 0,
    exited: new Promise((resolve) => child.once('exit', () => resolve())),
  };
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`member ${id} exited (${code}) before it was ready`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [what, at, value = ''] = line.split(' ');
      if (what === 'ready') {
        member.readyAt = Number(at);
        resolve(member);
      } else if (what === 'held') {
        member.held = value === '' ? [] : value.split(',').map(Number);
        member.changedAt = Number(at);
      } else if (what === 'requests') member.requests = Number(value);
    });
  });
}

async function waitFor(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every shard held once, and the counts per member as given (any order). */
function balanced(members: readonly Member[], shards: number, counts: readonly number[]): boolean {
  const all = members.flatMap((m) => m.held);
  if (all.length !== shards || new Set(all).size !== shards) return false;
  const have = members.map((m) => m.held.length).sort();
  return JSON.stringify(have) === JSON.stringify([...counts].sort());
}

async function balancing(azurite: AzuriteProcess): Promise<string[]> {
  const shards = 8;
  const prefix = `shardbal${Date.now().toString(36)}`;
  const lines: string[] = [];
  const members: Member[] = [];
  try {
    log('balance: starting members a and b (8 shards, 15 s lease, 1 s interval)');
    members.push(await startMember('a', azurite, prefix, shards), await startMember('b', azurite, prefix, shards));
    const [a, b] = members as [Member, Member];
    await waitFor('a and b holding 4 shards each', () => balanced([a, b], shards, [4, 4]), 60_000);

    log('balance: member c joins');
    const c = await startMember('c', azurite, prefix, shards);
    members.push(c);
    await waitFor('3/3/2', () => balanced([a, b, c], shards, [3, 3, 2]), 60_000);
    const rebalanceMs = Math.max(a.changedAt, b.changedAt, c.changedAt) - c.readyAt;

    log('balance: counting the balancing requests of the steady state (15 s)');
    const before = members.map((m) => m.requests);
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 15_000));
    const perMin = members.map((m, i) => ((m.requests - before[i]!) * 60_000) / (Date.now() - t0));

    log('balance: SIGTERM to c');
    const termAt = Date.now();
    c.child.kill('SIGTERM');
    await waitFor('a and b holding 4 each', () => balanced([a, b], shards, [4, 4]), 60_000);
    const termMs = Math.max(a.changedAt, b.changedAt) - termAt;
    await c.exited;

    log('balance: SIGKILL to b (its leases and member record are left to run out: about 15 s)');
    const killAt = Date.now();
    b.child.kill('SIGKILL');
    await waitFor('a holding all 8', () => balanced([a], shards, [8]), 150_000);
    const killMs = a.changedAt - killAt;

    lines.push(
      `shard rebalance ms when a member joins: ${f(rebalanceMs)} (2 members → 3, 8 shards, to 3/3/2; 1 s interval)`,
      `shard takeover ms after SIGTERM (shards released): ${f(termMs)} (the member stops its runners and releases its shards, then the others claim them within one interval, 1 s ±20 %)`,
      `shard takeover ms after SIGKILL (leases and member record run out): ${f(killMs)} (bound: the 15 s lease, for which the member also counts as live, + one interval)`,
      `balancing requests/min per member: ${f(median(perMin))} (${perMin.map((x, i) => `${members[i]!.id} ${f(x)}`).join(', ')}; heartbeat, listing and lease renewals every 5 s, 2-3 shards each)`,
    );
  } finally {
    for (const m of members) {
      if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGKILL');
      await m.exited;
    }
  }
  return lines;
}

// ---- main -----------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  console.log(`jobq sharding benchmark (docs/sharding.md); node ${process.version}; load average (1/5/15 min) at start: ${load()}`);
  let azurite: AzuriteProcess | null = null;
  try {
    let requestCpuUs = requestCpuUsArg ?? Number.NaN;
    let real: { rate: number; cpuUs: number; seconds: number; requestsPerTask: number } | null = null;
    if (parts.has('azurite') || parts.has('balance') || (parts.has('model') && requestCpuUsArg === null)) {
      log('starting Azurite in a child process');
      azurite = await startAzuriteProcess({ startTimeoutMs: 60_000 });
    }
    if (azurite !== null && requestCpuUsArg === null && (parts.has('model') || parts.has('azurite'))) {
      log('measuring client CPU per storage request');
      const measured = await requestCpu(azurite);
      requestCpuUs = measured.mean;
      console.log(
        `\nclient CPU per storage request (µs, jobq's clients against Azurite, median of 5 rounds of 200, 8 in flight): ` +
          `${Object.entries(measured.perOp)
            .map(([op, us]) => `${op} ${f(us, 1)}`)
            .join(', ')}; the model charges their mean, ${f(requestCpuUs, 1)} µs`,
      );
    }
    if (parts.has('azurite') && azurite !== null) {
      log(`real one-shard run on Azurite: ${realWorkflows} workflows of ${TASKS_PER_WORKFLOW} tasks`);
      const result = await endToEnd({
        connectionString: azurite.connectionString,
        prefix: `shardreal${Date.now().toString(36)}`,
        source: Array.from({ length: realWorkflows }, (_, i) => workflowDefinition(i)),
        slots: 32,
        timeoutInMs: 15 * 60_000,
        log: (line) => log(`  ${line}`),
      });
      if (result.status !== 'completed') throw new Error(`the Azurite run ended ${result.status}`);
      const requests =
        result.store.blob +
        result.store.table +
        result.outputsBlob +
        (result.taskQueueTx?.total ?? 0) +
        (result.completionQueueTx?.total ?? 0) +
        result.heartbeats;
      real = {
        rate: result.applied / result.seconds,
        cpuUs: (result.cpuMs * 1_000) / result.applied,
        seconds: result.seconds,
        requestsPerTask: requests / result.applied,
      };
    }

    if (parts.has('model')) {
      const inputs: ModelInputs = { requestCpuUs, jsTime: true, accountReqPerS: null };
      log('model: warm-up run (not reported)');
      await simulate(4, 4 * Math.min(16, workflowsPerShard), inputs);
      const runs = await modelRuns('queues capped', SHARD_COUNTS, inputs);
      const rows = [...runs.values()].map((r) => {
        const shardRates = r.shardRates.filter(Number.isFinite);
        return [
          String(r.shards),
          f(r.completions),
          f(r.rate),
          `${f(Math.min(...shardRates))} / ${f(Math.max(...shardRates))}`,
          `${Math.min(...r.shardWorkflows)} / ${Math.max(...r.shardWorkflows)}`,
          f(r.jsUs + r.requestUs, 1),
          `${f(r.jsUs, 1)} + ${f(r.requestUs, 1)}`,
          f(r.requestsPerTask, 2),
          f(r.wallS, 1),
        ];
      });
      console.log(
        `\nModel: n shard runners (the real Coordinator, stepped by runOnce() on a VirtualClock; in-memory store and queues),` +
          ` ${workflowsPerShard} seeded ${TASKS_PER_WORKFLOW}-task workflows per shard, instant workers, queues capped at ${f(QUEUE_MSG_PER_S)} msg/s`,
      );
      console.log(
        table(
          [
            'shards',
            'completions',
            'completions/s',
            'per shard min / max',
            'workflows per shard',
            'CPU µs/completion',
            'JS + requests µs',
            'requests/task',
            'wall s',
          ],
          rows,
        ),
      );
      const r1 = runs.get(1)!;
      const r8 = runs.get(8)!;
      const r16 = runs.get(16)!;
      const inputsText =
        `inputs: queue cap ${f(QUEUE_MSG_PER_S)} msg/s, client CPU ${f(requestCpuUs, 1)} µs per request, ` +
        `measured JS ${f(r1.jsUs, 1)} µs per completion at n = 1, ${f(r1.requestsPerTask, 2)} requests per task`;
      console.log(`\nshard scaling efficiency at 8 shards: ${f(r8.rate / (8 * r1.rate), 2)} (goal ≥ 0.8; ${inputsText})`);
      if (real === null) console.log('model n = 1 vs Azurite n = 1: Azurite not run (--parts without azurite)');
      else {
        // The same workflows as the Azurite run (its first `realWorkflows` seeds), in the model.
        log(`model: 1 shard, the Azurite run's ${realWorkflows} workflows`);
        const same = await simulate(1, realWorkflows, inputs);
        console.log(
          `model n = 1 vs Azurite n = 1, ${realWorkflows} workflows: ${f(same.rate)} vs ${f(real.rate)} completions/s ` +
            `(model CPU ${f(same.jsUs + same.requestUs, 1)} µs per completion, coordinator alone, ${f(same.requestsPerTask, 2)} requests per task; ` +
            `Azurite run ${f(real.seconds, 1)} s, bench-process CPU ${f(real.cpuUs, 1)} µs per completion, coordinator + worker + client, ` +
            `${f(real.requestsPerTask, 2)} requests per task; Azurite shares the machine's cores, the model has no server)`,
        );
      }
      console.log(`speedup at 16 shards: ${f(r16.rate / r1.rate, 1)}×`);

      log('checks');
      const free = await simulate(1, workflowsPerShard, { requestCpuUs: 0, jsTime: false, accountReqPerS: null });
      console.log(
        `check, CPU cost 0 holds one shard at the queue cap: ${f(free.rate)} completions/s (cap ${f(QUEUE_MSG_PER_S)}): ` +
          `${free.rate >= 0.95 * QUEUE_MSG_PER_S && free.rate <= QUEUE_MSG_PER_S * 1.001 ? 'holds' : 'FAILS'}`,
      );
      // The limits alone (CPU cost 0, as the check above): one shard stays far below the account's
      // limit, so the run above is its first point.
      const account = await modelRuns('one account, CPU cost 0', [2, 4, 8], {
        requestCpuUs: 0,
        jsTime: false,
        accountReqPerS: ACCOUNT_REQ_PER_S,
      });
      const accountRates = [free, ...account.values()];
      // Growth stops at the first shard count that gains less than 20 % over the one before.
      let stopsAt: ModelResult | null = null;
      for (let i = 1; i < accountRates.length; i++)
        if (accountRates[i]!.rate < 1.2 * accountRates[i - 1]!.rate) {
          stopsAt = accountRates[i]!;
          break;
        }
      console.log(
        `check, one ${f(ACCOUNT_REQ_PER_S)} req/s account (CPU cost 0): ${accountRates.map((r) => `${r.shards} shard(s) ${f(r.rate)}/s`).join(', ')}; ` +
          (stopsAt === null
            ? 'growth did not stop by 8 shards'
            : `growth stops at ${stopsAt.shards} shards, ${f(stopsAt.rate)} tasks/s (${f(ACCOUNT_REQ_PER_S)} ÷ ${f(stopsAt.requestsPerTask, 2)} requests per task = ${f(ACCOUNT_REQ_PER_S / stopsAt.requestsPerTask)})`),
      );
    }

    if (parts.has('balance') && azurite !== null) {
      const lines = await balancing(azurite);
      console.log('');
      for (const line of lines) console.log(line);
    }
  } finally {
    await azurite?.stop();
  }
  console.log(`\nload average (1/5/15 min) at end: ${load()}; total shards bench time ${f((Date.now() - started) / 1_000, 1)} s`);
}

main().catch((error: unknown) => {
  process.stderr.write(`shards bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
