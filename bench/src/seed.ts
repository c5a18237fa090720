/**
 * Benchmark of the seed's shape (root → 998 leaves → terminal, 1 000 tasks) against Azurite in a
 * child process:
 *   1. coordinator only: 998 leaf completions pre-queued, a fresh coordinator applies them all;
 *   2. end to end: coordinator + in-process worker (32 slots) running no-op tasks in-process (the
 *      workflow processor with a command runner that returns exit 0 at once), and again with each
 *      task a real `bash -c :` subprocess (for reference: process start-up is the task's cost);
 *   3. ceiling: a bare loop doing the storage operations the engine needs at best, no engine;
 *   4. storage transactions counted during the end-to-end run;
 *   5. runs 2 and 3 three times each, CPU-bound and with every storage request delayed as on real
 *      Azure (JOBQ_BENCH_LATENCY_MS, default 20), with CPU per task of this process and Azurite.
 * Plain text tables on stdout, progress on stderr. bench/README.md lists what each side does per task.
 *
 *   6. 32 workflows of 100 tasks submitted at once (batches of several workflows in flight).
 *  2c. the end-to-end run with each task printing one line (so each uploads one task log).
 * Usage: node dist/seed.js   (JOBQ_SEED_PHASES=2 runs only the listed phases, e.g. to profile one;
 * JOBQ_SEED_MODES=cpu or latency one mode; JOBQ_SEED_RUNS=N runs per mode)
 */
import { createRuntime, encodeRuntime, validateWorkflow, type WorkflowDefinition } from '@jobq/dag-core';
import { decodeEnvelope, encodeCompletion, parseTaskMessageId } from '@jobq/dag-core/wire';
import { Coordinator, WorkflowClient, definitionHash } from '@jobq/coordinator';
import { startAzuriteProcess } from '@jobq/local';
import { openStorageQueue, type StorageTaskQueue } from '@jobq/queue-storage';
import { accountClients, openOutputStore, openWorkflowStore } from '@jobq/store-azure';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { coordinatorOptions, endToEnd, seconds, waitUntil, type EndToEndResult } from './e2e-run';
import { LATENCY_VARIABLE, StoragePolicies, benchLatencyMs, delayPolicies } from './storage-latency';
import { LEAVES, TASKS, leafName, seedSource } from './seed-shape';
import { profiled, type ProfileSummary } from './profile';
import { failureText } from './report';
import { errorMessage } from '@jobq/ports';

/** Untimed engine and ceiling runs before the timed ones. */
const WARM_UP_PAIRS = 2;

/** Phase 6: this many workflows of {@link SMALL_TASKS} tasks each, submitted at once. */
const MANY_WORKFLOWS = 32;
const SMALL_TASKS = 100;

/** root → 98 leaves → terminal: a seed shape of 100 tasks. */
function smallSource(): object {
  const leaves = Array.from({ length: SMALL_TASKS - 2 }, (_, i) => `leaf-${i}`);
  return {
    name: 'small',
    tasks: [
      { name: 'root', kwargs: { cmd: ':' } },
      ...leaves.map((name) => ({ name, depends_on: ['root'], kwargs: { cmd: ':' } })),
      { name: 'terminal', depends_on: leaves, kwargs: { cmd: ':' } },
    ],
  };
}

/** Tasks in flight at once: the engine worker's slots, and the ceiling's worker loop's receive size. */
const SLOTS = 32;

function log(line: string): void {
  process.stderr.write(`[seed bench] ${line}\n`);
}

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const f = (n: number, digits = 2) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits, useGrouping: false });

function seedDefinition(): WorkflowDefinition {
  const result = validateWorkflow(seedSource());
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.value;
}

/** Calls `onSend(taskName)` for every task message the coordinator sends to `queue`. */
function watchSends(queue: StorageTaskQueue, onSend: (taskName: string) => void): StorageTaskQueue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'send') {
        return async (messages: Parameters<StorageTaskQueue['send']>[0], options?: Parameters<StorageTaskQueue['send']>[1]) => {
          await target.send(messages, options);
          for (const m of Array.isArray(messages) ? messages : [messages]) {
            const envelope = decodeEnvelope((m as { body: string }).body);
            if (!envelope.ok) continue;
            const parts = parseTaskMessageId(envelope.value.id);
            if (parts.ok) onSend(parts.value.taskName);
          }
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

interface Phase1Result {
  seconds: number;
  cpuMs: number;
  applied: number;
}

/** 1. Coordinator only: the 998 leaf completions are on the queue before the coordinator starts. */
async function coordinatorOnly(connectionString: string): Promise<Phase1Result> {
  const connection = { connectionString };
  const prefix = 'SeedCoord';
  const store = await openWorkflowStore({ connection, prefix });
  const outputs = await openOutputStore({ connection, prefix });
  const completions = await openStorageQueue({ connection, queueName: store.names.completionQueue, lockDurationInMs: 60_000 });
  const taskQueue = await openStorageQueue({ connection, queueName: `${prefix.toLowerCase()}-default`, lockDurationInMs: 60_000 });
  const sent = new Set<string>();
  const watched = watchSends(taskQueue, (name) => sent.add(name));
  const logs: string[] = [];
  const make = () =>
    new Coordinator({
      store,
      completions,
      outputs,
      queues: (spec) =>
        spec === 'default'
          ? watched
          : (() => {
              throw new Error(`no queue ${spec}`);
            })(),
      options: coordinatorOptions(logs),
    });
  try {
    const client = new WorkflowClient({ store, completions, outputsContainer: store.names.outputsContainer });
    const first = make();
    await first.start();
    log('1: submitting the seed workflow');
    const { workflowId } = await client.submit({ text: JSON.stringify(seedSource()), filename: 'seed.json' });
    await waitUntil('root dispatched', () => sent.has('root'), 60_000);
    log('1: root dispatched; completing it');
    await completions.send({
      body: encodeCompletion({ workflowId, taskName: 'root', success: true, attemptNo: 1, outputRef: null, error: null }),
    });
    await waitUntil('998 leaves dispatched', () => sent.size >= 1 + LEAVES, 60_000);
    log('1: 998 leaves dispatched; stopping the coordinator');
    await first.stop();
    log('1: pre-queueing 998 leaf completions');
    await completions.send(
      Array.from({ length: LEAVES }, (_, i) => ({
        body: encodeCompletion({ workflowId, taskName: leafName(i), success: true, attemptNo: 1, outputRef: null, error: null }),
      })),
    );
    const queued = await completions.approximateMessageCount();
    log(`1: ${queued} messages queued; starting a fresh coordinator`);
    const second = make();
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await second.start();
    await waitUntil('terminal dispatched', () => sent.has('terminal'), 90_000, 1);
    const s = seconds(t0);
    const cpu = process.cpuUsage(cpu0);
    // The counter moves after the batch's dispatch (the terminal goes out inside the last apply).
    await waitUntil('998 completions counted', () => second.counters.completionsApplied >= LEAVES, 10_000).catch(() => undefined);
    const applied = second.counters.completionsApplied;
    await second.stop();
    if (logs.length > 0) log(`1: coordinator log lines: ${logs.length} (last: ${logs[logs.length - 1]})`);
    return { seconds: s, cpuMs: (cpu.user + cpu.system) / 1000, applied };
  } finally {
    await completions.deleteQueue().catch(() => undefined);
    await taskQueue.deleteQueue().catch(() => undefined);
    await store.deleteStorage().catch(() => undefined);
  }
}

interface Phase3Result {
  seconds: number;
  blobWrites: number;
  blobBytes: number;
  /** Storage requests in the timed window, all loops. */
  requests: number;
  cpuMs: number;
  otherCpuMs: number | null;
}

interface RunSettings {
  /** Extra policies on every storage client of the run (e.g. the latency delay). */
  policies: readonly StoragePolicies[];
  /** Azurite's CPU ms so far. */
  otherCpuMs?: () => number;
}

/**
 * 3. Ceiling: the engine's queue and blob operations per task with no engine, 32 tasks in flight,
 * plus what the engine cannot avoid per workflow: the submit (the store's `create`, as the engine's
 * submit makes it: runtime blobs, task rows, index row; then a wake-up message) and one index-row
 * write at the end. bench/README.md has the table of both sides.
 */
async function ceiling(connectionString: string, settings: RunSettings): Promise<Phase3Result> {
  const connection = { connectionString };
  let requests = 0;
  const counter = new StoragePolicies('bench-ceiling-counter', (send) => {
    requests++;
    return send();
  });
  const extra = [counter, ...settings.policies];
  const tasks = await openStorageQueue({
    connection,
    queueName: 'seedceil-tasks',
    lockDurationInMs: 60_000,
    policies: extra.map((p) => p.queue()),
  });
  const dones = await openStorageQueue({
    connection,
    queueName: 'seedceil-completions',
    lockDurationInMs: 60_000,
    policies: extra.map((p) => p.queue()),
  });
  const clients = accountClients(connection, { operationTimeoutInMs: 30_000, blobPolicies: extra.map((p) => p.blob()) });
  const container = clients.container('seedceil');
  await container.createIfNotExists();
  // The submit's store: its requests go through the same policies.
  const store = await openWorkflowStore({
    connection,
    prefix: `SeedCeil${Date.now().toString(36)}`,
    blobPolicies: extra.map((p) => p.blob()),
    tablePolicies: extra.map((p) => p.table()),
  });
  const blob = container.getBlockBlobClient('runtime.json');
  const def = seedDefinition();
  const runtime = createRuntime(def, { workflowId: 'ceiling', now: new Date().toISOString() });
  const body = Buffer.from(encodeRuntime(runtime), 'utf8');
  let blobWrites = 0;
  try {
    const taskBody = (i: number) => JSON.stringify({ version: 1, id: `ceiling/${leafName(i)}/1`, kwargs: '{"cmd":":"}', num_retries: 0 });
    const doneBody = (i: number) =>
      encodeCompletion({ workflowId: 'ceiling', taskName: leafName(i), success: true, attemptNo: 1, outputRef: null, error: null });
    const wakeBody = 'wake-up';
    log('3: ceiling loop, 1 000 tasks');
    requests = 0;
    const other0 = settings.otherCpuMs?.() ?? 0;
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    // The submit, as the engine's: the store's create (runtime blobs, task rows, index row), the
    // wake-up; and the runtime-sized blob the batches below write over.
    await store.create(runtime, definitionHash(def));
    let etag = (await blob.upload(body, body.length, { conditions: { ifNoneMatch: '*' } })).etag!;
    blobWrites++;
    await dones.send({ body: wakeBody });
    let worked = 0;
    let applied = 0;
    const send = tasks.send(Array.from({ length: TASKS }, (_, i) => ({ body: taskBody(i) })));
    // One "worker": 32 slots, as the engine's worker. Whenever slots are free it receives up to that
    // many; each task deletes its message and sends its completion, freeing its slot at once.
    const workerLoop = async () => {
      let inFlight = 0;
      let freed: (() => void) | null = null;
      while (worked < TASKS) {
        if (inFlight >= SLOTS) {
          await new Promise<void>((resolve) => (freed = resolve));
          continue;
        }
        const batch = await tasks.receive({ maxMessages: SLOTS - inFlight, maxWaitTimeInMs: 50 });
        for (const m of batch) {
          inFlight++;
          void (async () => {
            await tasks.complete(m);
            await dones.send({ body: doneBody(worked++ % LEAVES) });
            inFlight--;
            const wake = freed as (() => void) | null;
            freed = null;
            wake?.();
          })();
        }
      }
    };
    // One "coordinator": receive 32 completions, one If-Match blob write, delete them.
    const coordinatorLoop = async () => {
      while (applied < TASKS) {
        const batch = await dones.receive({ maxMessages: 32, maxWaitTimeInMs: 50 });
        if (batch.length === 0) continue;
        etag = (await blob.upload(body, body.length, { conditions: { ifMatch: etag } })).etag!;
        blobWrites++;
        await Promise.all(batch.map((m) => dones.complete(m)));
        applied += batch.filter((m) => m.body !== wakeBody).length;
      }
    };
    await Promise.all([send, workerLoop(), coordinatorLoop()]);
    // The end: one index-row write.
    await store.writeIndexRow({ ...runtime, status: 'completed' });
    const s = seconds(t0);
    const cpu = process.cpuUsage(cpu0);
    return {
      seconds: s,
      blobWrites,
      blobBytes: body.length,
      requests,
      cpuMs: (cpu.user + cpu.system) / 1000,
      otherCpuMs: settings.otherCpuMs ? settings.otherCpuMs() - other0 : null,
    };
  } finally {
    await tasks.deleteQueue().catch(() => undefined);
    await dones.deleteQueue().catch(() => undefined);
    await container.deleteIfExists().catch(() => undefined);
    await store.deleteStorage().catch(() => undefined);
  }
}

/**
 * For a CPU-bound ratio between 0.6 and 0.8: one more CPU-bound run of each side under the
 * profiler, CPU ms per task by bucket side by side, and the largest differences: what bounds the
 * ratio, and so what would move it next.
 */
async function whereTheCpuGoes(connectionString: string, azuriteCpu: (() => number) | undefined): Promise<void> {
  log('profiling one CPU-bound run of each side');
  const engine = await phase('profile engine', () =>
    profiled(() =>
      endToEnd({
        connectionString,
        prefix: 'SeedProf',
        source: seedSource(),
        slots: SLOTS,
        timeoutInMs: 300_000,
        log: () => undefined,
        ...(azuriteCpu ? { otherCpuMs: azuriteCpu } : {}),
      }),
    ),
  );
  const bare = await phase('profile ceiling', () =>
    profiled(() => ceiling(connectionString, { policies: [], ...(azuriteCpu ? { otherCpuMs: azuriteCpu } : {}) })),
  );
  if (!engine || !bare) return;
  const perTask = (ms: number) => ms / TASKS;
  const names = [...new Set([...engine.summary.buckets, ...bare.summary.buckets].map((b) => b.name))];
  const of = (s: ProfileSummary, name: string) => perTask(s.buckets.find((b) => b.name === name)?.ms ?? 0);
  const rows = names.map((name) => ({ name, engine: of(engine.summary, name), ceiling: of(bare.summary, name) }));
  const az = {
    name: 'Azurite (child process, /proc)',
    engine: perTask(engine.result.otherCpuMs ?? 0),
    ceiling: perTask(bare.result.otherCpuMs ?? 0),
  };
  const all = [...rows, az].sort((a, b) => b.engine - b.ceiling - (a.engine - a.ceiling));
  console.log(
    '\nWhere the CPU goes (printed when the CPU-bound ratio is between 0.6 and 0.8): one more CPU-bound run of each side, this process',
  );
  console.log('under the profiler (each sample charged to the nearest jobq package on its stack, so SDK work under a jobq call counts');
  console.log('to that package), and Azurite from /proc; CPU ms per task, largest gap first:');
  console.log(
    table(
      ['where', 'engine', 'ceiling', 'gap'],
      all.map((r) => [r.name, f(r.engine), f(r.ceiling), f(r.engine - r.ceiling)]),
    ),
  );
  console.log(
    `   run time: engine ${f(engine.result.seconds)} s, ceiling ${f(bare.result.seconds)} s (profiled; slower than the timed runs)`,
  );
  const top = all.filter((r) => r.engine - r.ceiling > 0.05).slice(0, 3);
  console.log(
    `what would move it next: ${top.map((r) => `${r.name} (+${f(r.engine - r.ceiling)} ms/task)`).join(', ') || 'nothing stands out'}`,
  );
}

async function phase<T>(name: string, run: () => Promise<T>): Promise<T | null> {
  try {
    return await run();
  } catch (error) {
    log(`${name} failed: ${failureText(error)}`);
    return null;
  }
}

/** CPU ms (user + system) a process has used so far, from /proc/PID/stat; null where there is no /proc. */
function procCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks();
  } catch {
    return null;
  }
}

let ticks: number | null = null;
function clockTicks(): number {
  if (ticks === null) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** Every storage request of a run: queues, workflow store, output store (outputs and task logs), heartbeat registry. */
const transactions = (r: EndToEndResult) =>
  (r.taskQueueTx?.total ?? 0) + (r.completionQueueTx?.total ?? 0) + r.store.blob + r.store.table + r.outputsBlob + r.heartbeats;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
/** `median (min–max)` of `xs`. */
const spread = (xs: number[], digits = 0) =>
  xs.length === 0 ? 'not measured' : `${f(median(xs), digits)} (${f(Math.min(...xs), digits)}–${f(Math.max(...xs), digits)})`;

function loadAverage(): string {
  return loadavg()
    .map((x) => f(x))
    .join(' / ');
}

interface ModeRuns {
  label: string;
  engine: EndToEndResult[];
  ceiling: Phase3Result[];
}

async function main(): Promise<void> {
  const started = Date.now();
  const latencyMs = benchLatencyMs();
  const runs = Math.max(1, Number(process.env.JOBQ_SEED_RUNS ?? '3') || 3);
  log(`load average at start: ${loadAverage()}`);
  log('starting Azurite in a child process');
  const azurite = await startAzuriteProcess();
  const loadAtStart = loadAverage();
  try {
    const only = (process.env.JOBQ_SEED_PHASES ?? '').split(',').filter((x) => x !== '');
    const wanted = (name: string) => only.length === 0 || only.includes(name);
    const azuriteCpu = procCpuMs(azurite.pid) === null ? undefined : () => procCpuMs(azurite.pid) ?? 0;
    const p1 = wanted('1') ? await phase('1 coordinator-only', () => coordinatorOnly(azurite.connectionString)) : null;
    const e2e = (prefix: string, subprocesses: boolean, policies: readonly StoragePolicies[], label: string) =>
      endToEnd({
        connectionString: azurite.connectionString,
        prefix,
        source: seedSource(),
        slots: SLOTS,
        subprocesses,
        timeoutInMs: 300_000,
        log: (line) => log(`2 (${label}): ${line}`),
        policies,
        ...(azuriteCpu ? { otherCpuMs: azuriteCpu } : {}),
      });
    const modes: ModeRuns[] = [
      { label: 'CPU-bound (no added latency)', engine: [], ceiling: [] },
      { label: `${f(latencyMs, 0)} ms storage latency`, engine: [], ceiling: [] },
    ];
    const policiesOf = [[], [delayPolicies(latencyMs)]] as const;
    const runModes = (process.env.JOBQ_SEED_MODES ?? 'cpu,latency').split(',');
    // Untimed pairs first, so that no timed run pays the first-run costs (JIT compilation in both
    // processes, Azurite's first requests), which would fall on whichever side runs first; the
    // engine, with much more code to compile, still ran about 25 % slower on its second run.
    for (let warm = 1; warm <= WARM_UP_PAIRS; warm++) {
      if (wanted('2')) await phase('2 warm-up', () => e2e(`SeedWarm${warm}`, false, [], 'warm-up'));
      if (wanted('3')) await phase('3 warm-up', () => ceiling(azurite.connectionString, { policies: [] }));
    }
    for (let run = 1; run <= runs; run++) {
      for (const [i, mode] of modes.entries()) {
        if (!runModes.includes(i === 0 ? 'cpu' : 'latency')) continue;
        const policies = policiesOf[i]!;
        // Engine and ceiling interleaved, so that both see the same load on a shared machine.
        if (wanted('2')) {
          const r = await phase(`2 end-to-end (${mode.label}, run ${run})`, () => e2e(`SeedE2e${i}r${run}`, false, policies, mode.label));
          if (r && r.status === 'completed') mode.engine.push(r);
        }
        if (wanted('3')) {
          const r = await phase(`3 ceiling (${mode.label}, run ${run})`, () =>
            ceiling(azurite.connectionString, { policies, ...(azuriteCpu ? { otherCpuMs: azuriteCpu } : {}) }),
          );
          if (r) mode.ceiling.push(r);
        }
      }
    }
    const p2b = wanted('2b') ? await phase('2b end-to-end with subprocesses', () => e2e('SeedE2eShell', true, [], 'subprocesses')) : null;
    // 2c. Each task prints one line, so each leaves one task log (one Put Blob): CPU-bound, `runs` runs.
    const p2c: EndToEndResult[] = [];
    if (wanted('2c')) {
      for (let run = 1; run <= runs; run++) {
        const r = await phase(`2c end-to-end, one line per task (run ${run})`, () =>
          endToEnd({
            connectionString: azurite.connectionString,
            prefix: `SeedLine${run}`,
            source: seedSource(),
            slots: SLOTS,
            taskLines: 1,
            timeoutInMs: 300_000,
            log: (line) => log(`2c: ${line}`),
          }),
        );
        if (r && r.status === 'completed') p2c.push(r);
      }
    }
    // 6. Many workflows at once: batches of different workflows in flight together.
    const many: Array<{ label: string; rates: number[] }> = [
      { label: 'CPU-bound', rates: [] },
      { label: `at ${f(latencyMs, 0)} ms storage latency`, rates: [] },
    ];
    if (wanted('6')) {
      for (let run = 1; run <= runs; run++) {
        for (const [i, mode] of many.entries()) {
          if (!runModes.includes(i === 0 ? 'cpu' : 'latency')) continue;
          const r = await phase(`6 ${MANY_WORKFLOWS} workflows (${mode.label}, run ${run})`, () =>
            endToEnd({
              connectionString: azurite.connectionString,
              prefix: `SeedMany${i}r${run}`,
              source: Array.from({ length: MANY_WORKFLOWS }, () => smallSource()),
              slots: SLOTS,
              timeoutInMs: 600_000,
              log: (line) => log(`6 (${mode.label}): ${line}`),
              policies: policiesOf[i]!,
            }),
          );
          if (r && r.status === 'completed') mode.rates.push((MANY_WORKFLOWS * SMALL_TASKS) / r.seconds);
        }
      }
    }
    const loadAtEnd = loadAverage();

    const nm = 'not measured';
    const [cpuMode, latencyMode] = modes as [ModeRuns, ModeRuns];
    /** The engine run with the median rate (its counts feed the transaction table). */
    const medianRun = (xs: EndToEndResult[]) => [...xs].sort((a, b) => a.seconds - b.seconds)[Math.floor(xs.length / 2)] ?? null;
    const p2 = medianRun(cpuMode.engine);
    const p3 = [...cpuMode.ceiling].sort((a, b) => a.seconds - b.seconds)[Math.floor(cpuMode.ceiling.length / 2)] ?? null;
    const rows: string[][] = [];
    rows.push([
      `1. coordinator only (${LEAVES} pre-queued completions)`,
      p1 ? f(p1.seconds) : nm,
      p1 ? f(LEAVES / p1.seconds, 0) : nm,
      p1 ? `${f(p1.cpuMs / LEAVES, 3)} CPU ms/completion (${p1.applied} applied)` : nm,
    ]);
    const e2eRate = p2 ? TASKS / p2.seconds : null;
    rows.push([
      `2. end to end (${TASKS} no-op tasks, ${SLOTS} worker slots; median run)`,
      p2 ? f(p2.seconds) : nm,
      e2eRate !== null ? f(e2eRate, 0) : nm,
      p2 ? `${p2.saves} saves, ${p2.batches} batches` : nm,
    ]);
    const shellRate = p2b && p2b.status === 'completed' ? TASKS / p2b.seconds : null;
    rows.push([
      `2b. same, each task a bash -c : subprocess`,
      p2b ? f(p2b.seconds) : nm,
      shellRate !== null ? f(shellRate, 0) : nm,
      p2b ? `status ${p2b.status}; ${p2b.saves} saves, ${p2b.batches} batches` : nm,
    ]);
    const ceilRate = p3 ? TASKS / p3.seconds : null;
    rows.push([
      `3. ceiling (no engine, ${TASKS} tasks; median run)`,
      p3 ? f(p3.seconds) : nm,
      ceilRate !== null ? f(ceilRate, 0) : nm,
      p3 ? `${p3.blobWrites} blob writes of ${f(p3.blobBytes / 1024, 0)} KiB, ${f(p3.requests / TASKS)} requests/task` : nm,
    ]);

    console.log('jobq seed benchmark: root → 998 leaves → terminal (1 000 tasks), against Azurite in a child process');
    console.log(
      `node ${process.version}; runs 2 and 3: ${WARM_UP_PAIRS} untimed warm-up pairs, then ${runs} each per mode, interleaved; load average (1/5/15 min) at start ${loadAtStart}, at end ${loadAtEnd}.\n`,
    );
    console.log(table(['run', 'seconds', 'completions/s', 'notes'], rows));
    console.log('   1: from a fresh coordinator start (lease, first index scan) to the terminal task sent; CPU = process.cpuUsage()');
    console.log('      delta over that window / 998, the whole process (coordinator plus its in-process SDK clients).');
    console.log(
      '   2: from the submit (coordinator and worker started before) to the index row reading "completed" (read once the coordinator logs the end)',
    );
    console.log('      and the completion queue empty (every completion deleted, as the ceiling deletes its own before it ends);');
    console.log('      the workflow processor runs each task with an in-process command runner that exits 0 at once.');
    console.log('  2b: the same with the default runner: every task is a real `bash -c :` process (start-up ~10 ms of CPU each).');
    console.log(
      `   3: the submit as the engine's (the store's create: runtime blobs, task rows, index row; a wake-up); 1 000 task sends; one "worker" of ${SLOTS} slots receives for its free slots`,
    );
    console.log(
      '      and each task deletes its message + sends a completion; one loop receives 32 completions, writes the runtime-sized blob with If-Match',
    );
    console.log('      once per batch, deletes them; then one index-row write. See bench/README.md for both sides per task.\n');

    const rate = (s: number) => TASKS / s;
    const modeRows = modes.map((m) => {
      const pairs = Math.min(m.engine.length, m.ceiling.length);
      const ratios = Array.from({ length: pairs }, (_, i) => m.ceiling[i]!.seconds / m.engine[i]!.seconds);
      const perTask = (xs: number[]) =>
        spread(
          xs.map((x) => x / TASKS),
          2,
        );
      return [
        m.label,
        spread(m.engine.map((r) => rate(r.seconds))),
        spread(m.ceiling.map((r) => rate(r.seconds))),
        spread(ratios, 2),
        `${perTask(m.engine.map((r) => r.cpuMs))} / ${perTask(m.ceiling.map((r) => r.cpuMs))}`,
        `${perTask(m.engine.flatMap((r) => (r.otherCpuMs === null ? [] : [r.otherCpuMs])))} / ${perTask(m.ceiling.flatMap((r) => (r.otherCpuMs === null ? [] : [r.otherCpuMs])))}`,
      ];
    });
    console.log(`5. Engine against ceiling, ${runs} run(s) per mode: median (min–max)`);
    console.log(
      table(
        [
          'mode',
          'engine completions/s',
          'ceiling completions/s',
          'paired ratio',
          'bench CPU ms/task engine / ceiling',
          'Azurite CPU ms/task engine / ceiling',
        ],
        modeRows,
      ),
    );
    console.log(
      `   latency: every storage request of the coordinator, worker, client and ceiling held ${f(latencyMs / 2, 1)} ms before it is sent and`,
    );
    console.log(
      `   ${f(latencyMs / 2, 1)} ms after its answer (async timers; concurrent requests overlap); ${LATENCY_VARIABLE} sets the total (default 20).`,
    );
    console.log('   Ratios below: median engine rate over median ceiling rate. CPU: process.cpuUsage() of the bench process (coordinator,');
    console.log('   worker, client, observer) and /proc/PID/stat utime+stime of the Azurite child, over the timed window, per task.\n');

    if (p2) {
      const tx = transactions(p2);
      const txRows = [
        [
          'task queue (coordinator sends; worker receives, renewals, deletes, idle polls)',
          String(p2.taskQueueTx?.total ?? 0),
          f((p2.taskQueueTx?.total ?? 0) / TASKS),
        ],
        [
          'completion queue (submit wake-up; worker sends; coordinator receives, deletes, idle polls)',
          String(p2.completionQueueTx?.total ?? 0),
          f((p2.completionQueueTx?.total ?? 0) / TASKS),
        ],
        ['workflow store blobs (runtime, lease, stats)', String(p2.store.blob), f(p2.store.blob / TASKS)],
        ['workflow store tables (index, task rows; worker cancel checks)', String(p2.store.table), f(p2.store.table / TASKS)],
        ['output store blobs (outputs, task logs: a silent task writes none)', String(p2.outputsBlob), f(p2.outputsBlob / TASKS)],
        ["worker heartbeats (table {PREFIX}Workers: beats, the coordinator's prune)", String(p2.heartbeats), f(p2.heartbeats / TASKS)],
        ['total', String(tx), f(tx / TASKS)],
      ];
      console.log(
        '4. Storage transactions during end-to-end run 2 (the CPU-bound median run; every request of the coordinator, the worker',
      );
      console.log(
        '   and the client, which all use the counted adapters handed in here; the shell tasks (":") touch no storage; not included:',
      );
      console.log('   opening the queues and stores before the run, the uncounted observer reading the index row at the end,');
      console.log('   and queue-SDK retries (the queue counting policy sits before the retry policy; no faults here).');
      console.log(table(['where', 'transactions', 'per task'], txRows));
      console.log('');
    } else {
      console.log('4. Storage transactions: not measured\n');
    }
    const ratioOf = (m: ModeRuns) =>
      m.engine.length > 0 && m.ceiling.length > 0
        ? f(median(m.engine.map((r) => rate(r.seconds))) / median(m.ceiling.map((r) => rate(r.seconds))))
        : nm;
    console.log(`engine/ceiling ratio: ${ratioOf(cpuMode)}`);
    const cpuRatio =
      cpuMode.engine.length > 0 && cpuMode.ceiling.length > 0
        ? median(cpuMode.engine.map((r) => rate(r.seconds))) / median(cpuMode.ceiling.map((r) => rate(r.seconds)))
        : null;
    // JOBQ_SEED_PROFILE=1 profiles whatever the ratio, 0 never.
    const profile = process.env.JOBQ_SEED_PROFILE;
    if (profile === '1' || (profile !== '0' && cpuRatio !== null && cpuRatio >= 0.6 && cpuRatio < 0.8)) {
      await whereTheCpuGoes(azurite.connectionString, azuriteCpu);
    }
    console.log(`engine/ceiling ratio at ${f(latencyMs, 0)} ms storage latency: ${ratioOf(latencyMode)}`);
    if (p2) {
      const tx = transactions(p2);
      console.log(`storage transactions per task: ${f(tx / TASKS)}${tx / TASKS > 4.5 ? ' (over the 4.5 goal)' : ''}`);
    } else {
      console.log(`storage transactions per task: ${nm}`);
    }
    if (wanted('2c')) {
      const line = medianRun(p2c);
      const silent = p2 ? transactions(p2) / TASKS : null;
      const perTask = line ? transactions(line) / TASKS : null;
      console.log(
        `2c one line per task, tx/task: ${perTask === null ? nm : f(perTask)}` +
          (perTask !== null && silent !== null
            ? ` (${f(perTask - silent, 2)} over silent; output store blobs ${f(line!.outputsBlob / TASKS)}/task)`
            : ''),
      );
    }
    const beating = [...cpuMode.engine, ...latencyMode.engine, ...p2c];
    if (beating.length > 0) {
      console.log(
        `heartbeats per run: ${spread(beating.map((r) => r.heartbeats))} (registry table requests in the timed window, interval 30 s; ` +
          `over the worker's life, first beat and row delete included: ${spread(beating.map((r) => r.heartbeatsLifetime))})`,
      );
    } else {
      console.log(`heartbeats per run: ${nm}`);
    }
    const tapped = [...cpuMode.engine, ...latencyMode.engine];
    if (tapped.length > 0) {
      const perBatch = (r: EndToEndResult, n: number) => n / Math.max(1, r.batches);
      console.log(
        `coordinator round trips per batch: ${spread(
          tapped.map((r) => perBatch(r, r.coordinatorRoundTrips)),
          2,
        )}`,
      );
      console.log(`   (storage requests the coordinator waited for one after another, its timers included, over its completion batches;`);
      console.log(
        `   requests per batch ${spread(
          tapped.map((r) => perBatch(r, r.coordinatorRequests)),
          1,
        )}; batches per run ${spread(tapped.map((r) => r.batches))}; all runs of both modes)`,
      );
    } else {
      console.log(`coordinator round trips per batch: ${nm}`);
    }
    for (const mode of many) {
      if (!wanted('6')) break;
      console.log(
        `${MANY_WORKFLOWS} concurrent ${SMALL_TASKS}-task workflows, ${mode.label}: ${mode.rates.length === 0 ? nm : `${spread(mode.rates)} completions/s`}`,
      );
    }
    if (wanted('6'))
      console.log(
        `   (root → ${SMALL_TASKS - 2} leaves → terminal each, all submitted at once; one coordinator, one worker of ${SLOTS} slots; median (min–max) of ${runs})`,
      );
    console.log(`\nTotal seed bench time ${f((Date.now() - started) / 1000, 1)} s.`);
  } finally {
    await azurite.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`seed bench failed: ${errorMessage(error)}\n`);
  process.exitCode = 1;
});
