/**
 * Part 4 of the scale bench: a 100 000-task no-op workflow (root → 99 998 leaves → sink, submitted
 * with `--max-fan-in 1000` like the 1M run, so the leaves are released 1 000 at a time) end to end
 * against Azurite in a child process — a coordinator and an in-process worker (32 slots) whose
 * storage requests are all counted. Does the second half run as fast as the first (cost independent
 * of how far the workflow is), and how many storage transactions does a silent task cost?
 */
import { startAzuriteProcess } from '@jobq/local';
import { endToEnd } from './e2e-run';
import { progress, table } from './report';

const TASKS = 100_000;
const SLOTS = 32;

function source(): object {
  const leaves = Array.from({ length: TASKS - 2 }, (_, i) => `leaf-${String(i).padStart(6, '0')}`);
  return {
    name: 'scale-100k',
    tasks: [
      { name: 'root', kwargs: { cmd: ':' } },
      ...leaves.map((name) => ({ name, depends_on: ['root'], kwargs: { cmd: ':' } })),
      { name: 'sink', depends_on: leaves, kwargs: { cmd: ':' } },
    ],
  };
}

export async function endToEnd100k(): Promise<void> {
  progress('e2e: starting Azurite in a child process');
  const azurite = await startAzuriteProcess();
  try {
    const samples: Array<[number, number]> = [];
    const result = await endToEnd({
      connectionString: azurite.connectionString,
      prefix: 'Scale100k',
      source: source(),
      // Without it the root's completion queues all 99 998 leaves at once, and the embedded Azurite
      // serves a queue that deep at a few dozen sends/s (bench/README.md, "Scale benchmark").
      maxFanIn: 1000,
      slots: SLOTS,
      timeoutInMs: 60 * 60_000,
      log: (line) => progress(`e2e: ${line}`),
      onSample: (seconds, applied) => samples.push([seconds, applied]),
      sampleEveryInMs: 500,
    });
    const half = samples.find(([, applied]) => applied >= TASKS / 2)?.[0] ?? Number.NaN;
    const first = TASKS / 2 / half;
    const second = TASKS / 2 / (result.seconds - half);
    const tx =
      (result.taskQueueTx?.total ?? 0) +
      (result.completionQueueTx?.total ?? 0) +
      result.store.blob +
      result.store.table +
      result.outputsBlob +
      result.heartbeats;
    process.stdout.write(
      `\n100 000-task no-op workflow end to end (${SLOTS} worker slots, Azurite in a child process): status ${result.status}, ${result.seconds.toFixed(0)} s\n`,
    );
    process.stdout.write(
      `${table(
        ['where', 'transactions', 'per task'],
        [
          ['task queue', String(result.taskQueueTx?.total ?? 0), ((result.taskQueueTx?.total ?? 0) / TASKS).toFixed(2)],
          ['completion queue', String(result.completionQueueTx?.total ?? 0), ((result.completionQueueTx?.total ?? 0) / TASKS).toFixed(2)],
          ['workflow store blobs', String(result.store.blob), (result.store.blob / TASKS).toFixed(2)],
          ['workflow store tables', String(result.store.table), (result.store.table / TASKS).toFixed(2)],
          ['output store blobs', String(result.outputsBlob), (result.outputsBlob / TASKS).toFixed(2)],
          ['worker heartbeats', String(result.heartbeats), (result.heartbeats / TASKS).toFixed(2)],
          ['total', String(tx), (tx / TASKS).toFixed(2)],
        ],
      )}\n`,
    );
    process.stdout.write(
      `100k end to end: ${first.toFixed(0)} completions/s first half, ${second.toFixed(0)} second half (ratio ${(second / first).toFixed(2)}); ${result.saves} saves\n`,
    );
    process.stdout.write(`storage transactions per silent task at 100k: ${(tx / TASKS).toFixed(2)}\n`);
  } finally {
    await azurite.stop();
  }
}
