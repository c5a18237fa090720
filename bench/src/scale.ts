/**
 * How the coordinator's cost grows with workflow size. Prints, exactly so labelled:
 *   reducer scaling 100k/1k: X               (worst over wide, seq1000, layered; alone and batch32)
 *   flush bytes per batch at 100k tasks: X    (median bytes written per save of 32 completions)
 *   1M-task coordinator run: X completions/s, peak RSS Y MiB
 *   100k-task end to end: …                  (completions/s per half, storage transactions per task)
 * with the tables behind them. Progress on stderr.
 *
 * Usage: node --expose-gc dist/scale.js [--parts=reducer,flush,million,e2e] [--sizes=1000,10000,100000,1000000]
 */
import { foldEvents, reduce, type CompletionEvent, type WorkflowRuntime } from '@jobq/dag-core';
import { progress, table } from './report';
import { SHAPES, T_RUN, activated, definitionOf, queueDispatches, type Fifo, type Shape } from './shapes';

const BATCH = 32;
const OUTPUT_REF = '{"ok":true}';

function arg(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

const PARTS = (arg('parts') ?? 'reducer,flush,million,e2e').split(',');
const SIZES = (arg('sizes') ?? '1000,10000,100000,1000000').split(',').map(Number);

function collect(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const sizeLabel = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);
const completion = (taskName: string): CompletionEvent => ({ type: 'completion', now: T_RUN, taskName, attemptNo: 1, success: true, outputRef: OUTPUT_REF, error: null });

// ---------------------------------------------------------------------------------------------
// 1. Reducer scaling

/** Completions after the warm-up that are timed, at most, and the wall-time budget of one mode. */
const SAMPLE = 2048;
const WARMUP = 64;
const BUDGET_MS = 4_000;
const MIN_SAMPLE = 64;

interface ReducerCase {
  shape: Shape;
  n: number;
  setupMs: number;
  aloneUs: number;
  batchUs: number;
  sampled: number;
}

/** The next `count` completions from `queue` (driving the runtime untimed), and the state before them. */
function warm(runtime: WorkflowRuntime, queue: Fifo, count: number): WorkflowRuntime {
  for (let i = 0; i < count; i++) {
    const name = queue.shift();
    if (name === undefined) break;
    const r = reduce(runtime, completion(name));
    queueDispatches(r.effects, queue);
    runtime = r.runtime;
  }
  return runtime;
}

function reducerCase(shape: Shape, n: number): ReducerCase {
  collect();
  const t0 = performance.now();
  const start = activated(definitionOf(shape, n));
  // Past the first completions (wide: the root's, which dispatches every leaf).
  let runtime = warm(start.runtime, start.queue, WARMUP);
  const setupMs = performance.now() - t0;
  const origin = runtime;
  const events: CompletionEvent[] = [];
  // Alone: one reduce call per completion, the coordinator's worst case.
  const queue = start.queue;
  const began = performance.now();
  let aloneMs = 0;
  while (events.length < SAMPLE && (events.length < MIN_SAMPLE || performance.now() - began < BUDGET_MS)) {
    const name = queue.shift();
    if (name === undefined) break;
    const event = completion(name);
    const t = performance.now();
    const r = reduce(runtime, event);
    aloneMs += performance.now() - t;
    queueDispatches(r.effects, queue);
    runtime = r.runtime;
    events.push(event);
  }
  // Batch32: the same events from the same state, folded 32 at a time (the coordinator's path).
  collect();
  let batchMs = 0;
  let rt = origin;
  for (let i = 0; i < events.length; i += BATCH) {
    const t = performance.now();
    rt = foldEvents(rt, events.slice(i, i + BATCH)).runtime;
    batchMs += performance.now() - t;
  }
  return { shape, n, setupMs, aloneUs: (aloneMs * 1000) / events.length, batchUs: (batchMs * 1000) / events.length, sampled: events.length };
}

function reducerScaling(): void {
  const cases: ReducerCase[] = [];
  for (const shape of SHAPES) {
    for (const n of SIZES) {
      progress(`reducer: ${shape} at ${sizeLabel(n)}`);
      cases.push(reducerCase(shape, n));
    }
  }
  const rows = cases.map((c) => [c.shape, sizeLabel(c.n), c.aloneUs.toFixed(1), c.batchUs.toFixed(1), String(c.sampled), (c.setupMs / 1000).toFixed(1)]);
  process.stdout.write(`\nReducer: µs per completion (FIFO order after ${WARMUP} warm-up completions)\n`);
  process.stdout.write(`${table(['shape', 'tasks', 'alone µs', 'batch32 µs', 'sampled', 'setup s'], rows)}\n`);
  const ratios: string[][] = [];
  let worst = 0;
  for (const shape of SHAPES) {
    const at = (n: number) => cases.find((c) => c.shape === shape && c.n === n);
    const small = at(1000);
    const large = at(100_000);
    if (!small || !large) continue;
    const alone = large.aloneUs / small.aloneUs;
    const batch = large.batchUs / small.batchUs;
    worst = Math.max(worst, alone, batch);
    ratios.push([shape, alone.toFixed(2), batch.toFixed(2)]);
  }
  if (ratios.length > 0) {
    process.stdout.write(`\n${table(['shape', '100k/1k alone', '100k/1k batch32'], ratios)}\n`);
    process.stdout.write(`reducer scaling 100k/1k: ${worst.toFixed(2)}\n`);
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now();
  if (PARTS.includes('reducer')) reducerScaling();
  if (PARTS.includes('flush')) await (await import('./scale-flush')).flushBytes();
  if (PARTS.includes('million')) await (await import('./scale-million')).millionTaskRun();
  if (PARTS.includes('e2e')) await (await import('./scale-e2e')).endToEnd100k();
  process.stdout.write(`\nTotal scale bench time ${((performance.now() - started) / 1000).toFixed(1)} s.\n`);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
