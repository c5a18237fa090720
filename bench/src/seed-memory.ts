/**
 * The seed's shape (root → 998 leaves → terminal) end to end on the in-memory adapters: the real
 * `Coordinator`, `WorkflowClient` and `Worker` (32 slots) with the real `WorkflowProcessor` (each task
 * an in-process no-op command), on `@jobq/memory`'s store, output store and queues. No Azure SDK, no
 * HTTP, no Azurite: the CPU per task is jobq's own code (the reducer, the coordinator's batches and
 * pipeline, the worker's attempt), so a change to it shows here without the noise of the storage
 * path. See bench/README.md.
 *
 * Usage: node dist/seed-memory.js   (JOBQ_SEED_MEMORY_RUNS=N timed workflows, default 5, after one untimed)
 */
import { Coordinator, WorkflowClient } from '@jobq/coordinator';
import { MemoryOutputStore, MemoryTaskQueue, MemoryWorkflowStore } from '@jobq/memory';
import { Worker, WorkflowProcessor, type RunShellOptions, type ShellResult } from '@jobq/worker';
import { loadavg } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { TASKS, seedSource } from './seed-shape';

const SLOTS = 32;

function log(line: string): void {
  process.stderr.write(`[seed-memory bench] ${line}\n`);
}

const noOp = (_options: RunShellOptions): Promise<ShellResult> =>
  Promise.resolve({ exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null });

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const f = (n: number, digits = 3) => n.toFixed(digits);

async function main(): Promise<void> {
  const runs = Math.max(1, Number(process.env.JOBQ_SEED_MEMORY_RUNS ?? '5') || 5);
  const load0 = loadavg();
  const store = new MemoryWorkflowStore();
  const outputs = new MemoryOutputStore();
  const completions = new MemoryTaskQueue({ name: 'seedmem-workflow-completions', lockDurationInMs: 60_000 });
  const tasks = new MemoryTaskQueue({ name: 'seedmem-default', lockDurationInMs: 60_000 });
  let finished = 0;
  const worker = new Worker({
    queue: tasks,
    numWorkers: SLOTS,
    receiveWaitInMs: 50,
    maxIdleBackoffInMs: 100,
    gracePeriodInMs: 0,
    log: () => undefined,
    taskLines: () => undefined,
    queueLabel: 'default',
    processors: [
      new WorkflowProcessor({
        outputs,
        completions,
        isCancelled: () => Promise.resolve(false),
        // The processor checks that a task is of its deployment; nothing is read through this string.
        env: {
          ...process.env,
          JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/SeedMem',
          JOBQ_STORAGE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
        },
        killTimeoutInMs: 2_000,
        completionBackoff: { initialInMs: 20, maxInMs: 100 },
        runCommand: noOp,
      }),
    ],
  });
  const coordinator = new Coordinator({
    store,
    completions,
    outputs,
    queues: () => tasks,
    options: {
      receiveWaitInMs: 100,
      idleSleepInMs: 50,
      cancelPollIntervalInMs: 1_000,
      statsIntervalInMs: 10_000,
      log: (line: string) => {
        if (/^workflow \S+: (completed|failed|cancelled)$/.test(line)) finished++;
      },
    },
  });
  const running = worker.run();
  await coordinator.start();
  const client = new WorkflowClient({ store, completions, outputsContainer: 'outputs' });
  const cpuMs: number[] = [];
  const rates: number[] = [];
  try {
    // The first workflow is untimed: it pays the JIT compilation.
    for (let r = 0; r <= runs; r++) {
      const target = finished + 1;
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await client.submit({ text: JSON.stringify(seedSource()), filename: 'workflow.json' });
      while (finished < target) await delay(2);
      const cpu = process.cpuUsage(cpu0);
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      if (r === 0) continue;
      cpuMs.push((cpu.user + cpu.system) / 1000 / TASKS);
      rates.push(TASKS / s);
      log(`run ${r}/${runs}: ${f(cpuMs.at(-1)!)} CPU ms/task, ${f(rates.at(-1)!, 0)} completions/s`);
    }
  } finally {
    await coordinator.stop();
    await worker.stop({ gracePeriodInMs: 0 });
    await running;
  }
  const load1 = loadavg();
  console.log(`jobq seed benchmark on the in-memory adapters: root → 998 leaves → terminal (${TASKS} tasks), ${SLOTS} worker slots`);
  console.log(
    `node ${process.version}; ${runs} timed workflow(s) after one untimed; load average (1/5/15 min) at start ${load0.map((x) => x.toFixed(2)).join(' / ')}, at end ${load1.map((x) => x.toFixed(2)).join(' / ')}.`,
  );
  console.log(
    `in-memory end to end: ${f(median(cpuMs))} CPU ms/task (${f(Math.min(...cpuMs))}–${f(Math.max(...cpuMs))}), ` +
      `${f(median(rates), 0)} completions/s (${f(Math.min(...rates), 0)}–${f(Math.max(...rates), 0)}); median (min–max)`,
  );
  console.log(
    '   CPU: process.cpuUsage() of this process (coordinator, worker, client) from the submit to the coordinator logging the end.',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`seed-memory bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
