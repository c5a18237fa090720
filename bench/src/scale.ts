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
import { failureText, progress, table } from './report';
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
const completion = (taskName: string): CompletionEvent => ({
  type: 'completion',
  now: T_RUN,
  taskName,
  attemptNo: 1,
  success: true,
  outputRef: OUTPUT_REF,
  error: null,
});

// ---------------------------------------------------------------------------------------------
// 1. Reducer scaling

/**
 * Timed passes per mode: each replays the whole run from the activated runtime (runtimes are
 * immutable, so every pass sees the same states); the median pass is kept, so one GC pause or one
 * preemption on a shared machine does not decide the figure. At least MIN_PASSES, then more while
 * under PASSES_BUDGET_MS.
 */
const MIN_PASSES = 3;
const MAX_PASSES = 15;
const PASSES_BUDGET_MS = 3_000;

interface ReducerCase {
  shape: Shape;
  n: number;
  setupMs: number;
  aloneUs: number;
  batchUs: number;
  completions: number;
  passes: number;
}

/** Median wall time (ms) of `pass`, run MIN_PASSES times and then while under budget. */
function medianPass(pass: () => void): { ms: number; passes: number } {
  const times: number[] = [];
  const began = performance.now();
  while (times.length < MIN_PASSES || (times.length < MAX_PASSES && performance.now() - began < PASSES_BUDGET_MS)) {
    const t = performance.now();
    pass();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { ms: times[times.length >> 1]!, passes: times.length };
}

/**
 * The cost of a whole run, per completion: every completion from activation to the end, in the
 * order the tasks were dispatched (FIFO). A run amortises everything a completion causes (the
 * dispatch of the tasks it makes ready, merge nodes, the sink), so shapes that dispatch early
 * (wide: the root readies every leaf) and shapes that dispatch as they go (seq1000: each merge
 * readies the next 1 000) are charged alike.
 */
function reducerCase(shape: Shape, n: number): ReducerCase {
  collect();
  const t0 = performance.now();
  const start = activated(definitionOf(shape, n));
  const events: CompletionEvent[] = [];
  let runtime = start.runtime;
  for (let name = start.queue.shift(); name !== undefined; name = start.queue.shift()) {
    const event = completion(name);
    const r = reduce(runtime, event);
    queueDispatches(r.effects, start.queue);
    runtime = r.runtime;
    events.push(event);
  }
  if (runtime.status !== 'completed') throw new Error(`bench bug: ${shape} at ${n} ended ${runtime.status}`);
  const setupMs = performance.now() - t0;
  const origin = start.runtime;
  let last: WorkflowRuntime = origin;
  // Alone: one reduce call per completion, the coordinator's worst case.
  collect();
  const alone = medianPass(() => {
    let r = origin;
    for (const event of events) r = reduce(r, event).runtime;
    last = r;
  });
  // Batch32: the same events folded 32 at a time (the coordinator's path).
  collect();
  const batch = medianPass(() => {
    let r = origin;
    for (let i = 0; i < events.length; i += BATCH) r = foldEvents(r, events.slice(i, i + BATCH)).runtime;
    last = r;
  });
  if (last.status !== 'completed') throw new Error(`bench bug: ${shape} at ${n}: a replay ended ${last.status}`);
  const perCompletion = (ms: number) => (ms * 1000) / events.length;
  return {
    shape,
    n,
    setupMs,
    aloneUs: perCompletion(alone.ms),
    batchUs: perCompletion(batch.ms),
    completions: events.length,
    passes: Math.min(alone.passes, batch.passes),
  };
}

function reducerScaling(): void {
  const cases: ReducerCase[] = [];
  // Smallest sizes first, every shape: a small case never runs on the heap a 1M case left behind.
  for (const n of SIZES) {
    for (const shape of SHAPES) {
      progress(`reducer: ${shape} at ${sizeLabel(n)}`);
      cases.push(reducerCase(shape, n));
    }
  }
  cases.sort((a, b) => SHAPES.indexOf(a.shape) - SHAPES.indexOf(b.shape) || a.n - b.n);
  const rows = cases.map((c) => [
    c.shape,
    sizeLabel(c.n),
    c.aloneUs.toFixed(2),
    c.batchUs.toFixed(2),
    String(c.completions),
    String(c.passes),
    (c.setupMs / 1000).toFixed(1),
  ]);
  process.stdout.write(`\nReducer: µs per completion over a whole run (activation to the end, FIFO; median of timed passes)\n`);
  process.stdout.write(`${table(['shape', 'tasks', 'alone µs', 'batch32 µs', 'completions', 'passes', 'setup s'], rows)}\n`);
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

/** Runs one part in a fresh child process (same flags), its output passed through. */
async function runAlone(part: string): Promise<void> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [...process.execArgv, __filename, `--parts=${part}`], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`the ${part} part failed (exit code ${String(code)})`);
}

async function main(): Promise<void> {
  const started = performance.now();
  if (PARTS.includes('reducer')) reducerScaling();
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when its part runs (an import() would load it as ECMAScript)
  if (PARTS.includes('flush')) await (require('./scale-flush') as typeof import('./scale-flush')).flushBytes();
  if (PARTS.includes('million')) {
    // Alone, its peak RSS is the run's own; after the reducer part it would count that part's heap.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when its part runs (an import() would load it as ECMAScript)
    if (PARTS.length === 1) await (require('./scale-million') as typeof import('./scale-million')).millionTaskRun();
    else await runAlone('million');
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when its part runs (an import() would load it as ECMAScript)
  if (PARTS.includes('e2e')) await (require('./scale-e2e') as typeof import('./scale-e2e')).endToEnd100k();
  process.stdout.write(`\nTotal scale bench time ${((performance.now() - started) / 1000).toFixed(1)} s.\n`);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${failureText(error)}\n`);
  process.exitCode = 1;
});
