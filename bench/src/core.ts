/**
 * Benchmark of the @jobq/dag-core reducer: completions per second through `reduce` for two DAG
 * shapes at 1k / 10k / 100k tasks, the cost of the runtime codec, and a breakdown of where a
 * completion's time goes. Plain text tables on stdout, progress on stderr.
 *
 * Usage: node --expose-gc dist/core.js [--sizes=1000,10000,100000] [--shapes=wide,wide/seq1000,layered]
 */
import {
  createRuntime,
  decodeRuntime,
  encodeRuntime,
  foldEvents,
  isMergeNode,
  reduce,
  sequentializeFanIn,
  taskStatus,
  validateWorkflow,
  type CompletionEvent,
  type Effect,
  type TaskRuntime,
  type WorkflowDefinition,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { encodeTaskMessage } from '@jobq/dag-core/wire';
import { Session } from 'node:inspector';
import { layeredRaw, OUTPUTS_CONTAINER, T_ACTIVATE, T_CREATE, T_RUN, wideRaw, WORKFLOW_ID } from './shapes';
import { PerformanceObserver } from 'node:perf_hooks';
import { failureText } from './report';

// ---------------------------------------------------------------------------------------------
// Parameters

const OUTPUT_REF = '{"ok":true}';

/** Completions timed together in the batch mode. */
const BATCH = 32;
/** Most completions measured per case (a whole number of batches). */
const MAX_SAMPLE = 2048;
/** A sample also stops at the first batch boundary after this much wall time. */
const SAMPLE_BUDGET_MS = 5000;
/** Same, for the short sample taken at 50 % done. */
const LATE_BUDGET_MS = 3000;
/**
 * Timed passes over the same sample (median pass kept): a sample of a fast reducer takes a few ms,
 * so a single pass is at the mercy of one GC pause or one preemption on a shared machine.
 */
const MIN_PASSES = 5;
const MAX_PASSES = 21;
const PASSES_BUDGET_MS = 1500;
/** Untimed completions before each sample, or fewer when they take longer than the budget. */
const WARMUP = 200;
const WARMUP_BUDGET_MS = 1500;
/** Wall time of the CPU-profiled replay per case (a prefix of the sampled events). */
const PROFILE_BUDGET_MS = 1500;
const PROFILE_INTERVAL_US = 100;
/** Width of the layered shape: 1k → 10 layers, 10k → 100, 100k → 1000. */
const LAYER_WIDTH = 100;
/** Batch size for the `wide/seq1000` variant (`sequentializeFanIn(def, 1000)`). */
const MAX_FAN_IN = 1000;

type Shape = 'wide' | 'wide/seq1000' | 'layered';
const ALL_SHAPES: readonly Shape[] = ['wide', 'wide/seq1000', 'layered'];

function parseArgs(): { sizes: number[]; shapes: Shape[] } {
  let sizes = [1000, 10000, 100000];
  let shapes: Shape[] = [...ALL_SHAPES];
  for (const arg of process.argv.slice(2)) {
    if (arg === '--') continue;
    const [key, value = ''] = arg.split('=', 2);
    if (key === '--sizes') sizes = value.split(',').map((s) => Number(s.trim()));
    else if (key === '--shapes') shapes = value.split(',').map((s) => s.trim()) as Shape[];
    else throw new Error(`unknown argument ${arg}`);
  }
  for (const n of sizes)
    if (!Number.isInteger(n) || n < 4 * LAYER_WIDTH) throw new Error(`bad size ${n} (need an integer ≥ ${4 * LAYER_WIDTH})`);
  for (const s of shapes) if (!ALL_SHAPES.includes(s)) throw new Error(`unknown shape ${s} (known: ${ALL_SHAPES.join(', ')})`);
  return { sizes, shapes };
}

// ---------------------------------------------------------------------------------------------
// Utilities

const START = performance.now();
function progress(message: string): void {
  process.stderr.write(`[bench ${((performance.now() - START) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);
}

const gcHook = (globalThis as { gc?: () => void }).gc;
function collect(): void {
  gcHook?.();
}

/** GC pause time reported by V8 (ms), summed since start; entries arrive asynchronously. */
let gcPauseMs = 0;
const gcObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcPauseMs += entry.duration;
});
gcObserver.observe({ entryTypes: ['gc'] });
async function gcPausesSoFar(): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  return gcPauseMs;
}

/** Keeps results of timed expressions alive so they are not optimised away. */
let blackhole: unknown;

function nowNs(): bigint {
  return process.hrtime.bigint();
}

function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

/** Median wall time (ms) of `fn`, run at least `minReps` times and then while under budget. */
function timeRepeated(fn: () => unknown, budgetMs: number, maxReps: number, minReps = 3): number {
  const times: number[] = [];
  const start = performance.now();
  while (times.length < minReps || (times.length < maxReps && performance.now() - start < budgetMs)) {
    const t0 = nowNs();
    blackhole = fn();
    times.push(Number(nowNs() - t0) / 1e6);
  }
  return median(times);
}

/** A FIFO of task names with O(1) shift. */
class Fifo {
  constructor(
    private readonly items: string[] = [],
    private head = 0,
  ) {}
  push(name: string): void {
    this.items.push(name);
  }
  shift(): string | undefined {
    return this.head < this.items.length ? this.items[this.head++] : undefined;
  }
  get size(): number {
    return this.items.length - this.head;
  }
  clone(): Fifo {
    return new Fifo(this.items.slice(this.head));
  }
  toArray(): string[] {
    return this.items.slice(this.head);
  }
}

// ---------------------------------------------------------------------------------------------
// Workflow shapes (raw, snake_case, as a user would submit them)

// wideRaw and layeredRaw: ./shapes, shared with the scale bench.

// ---------------------------------------------------------------------------------------------
// Case preparation

/** What the bench needs to know of a definition, computed here (not taken from dag-core internals). */
interface DefInfo {
  position: Map<string, number>;
  /** Tasks listing this one in `dependsOn` or `gates`. */
  dependents: Map<string, string[]>;
  /** `dependsOn.length + gates.length`: the lookups one `settle` of the task makes. */
  parentCount: Map<string, number>;
  merge: Set<string>;
  /** Tasks that a worker completes (every task but merge nodes). */
  workTasks: number;
}

function defInfo(def: WorkflowDefinition): DefInfo {
  const position = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  const parentCount = new Map<string, number>();
  const merge = new Set<string>();
  def.tasks.forEach((t, i) => {
    position.set(t.name, i);
    if (isMergeNode(t.name, t.kwargs)) merge.add(t.name);
    const parents = [...t.dependsOn, ...(t.gates ?? [])];
    parentCount.set(t.name, parents.length);
    for (const p of parents) {
      const list = dependents.get(p);
      if (list) list.push(t.name);
      else dependents.set(p, [t.name]);
    }
  });
  return { position, dependents, parentCount, merge, workTasks: def.tasks.length - merge.size };
}

interface Prepared {
  shape: Shape;
  n: number;
  definition: WorkflowDefinition;
  info: DefInfo;
  buildMs: number;
  validateMs: number;
  transformMs: number;
  createMs: number;
  activateMs: number;
  /** Right after `activate`. */
  activated: WorkflowRuntime;
  /** Dispatched by `activate`, in order. */
  queue: Fifo;
}

function prepare(shape: Shape, n: number): Prepared {
  let t0 = performance.now();
  const raw = shape === 'layered' ? layeredRaw(n, LAYER_WIDTH) : wideRaw(n);
  const buildMs = performance.now() - t0;

  t0 = performance.now();
  const valid = validateWorkflow(raw);
  if (!valid.ok) throw new Error(`${shape} ${n}: invalid: ${JSON.stringify(valid.issues.slice(0, 3))}`);
  const validateMs = performance.now() - t0;

  let definition = valid.value;
  let transformMs = 0;
  if (shape === 'wide/seq1000') {
    t0 = performance.now();
    const seq = sequentializeFanIn(definition, MAX_FAN_IN);
    if (!seq.ok) throw new Error(`sequentializeFanIn: ${JSON.stringify(seq.issues.slice(0, 3))}`);
    definition = seq.value;
    transformMs = performance.now() - t0;
  }

  t0 = performance.now();
  const created = createRuntime(definition, { workflowId: WORKFLOW_ID, now: T_CREATE, outputsContainer: OUTPUTS_CONTAINER });
  const createMs = performance.now() - t0;

  t0 = performance.now();
  const activated = reduce(created, { type: 'activate', now: T_ACTIVATE });
  const activateMs = performance.now() - t0;

  const queue = new Fifo();
  applyEffects(activated.effects, queue);
  return {
    shape,
    n,
    definition,
    info: defInfo(definition),
    buildMs,
    validateMs,
    transformMs,
    createMs,
    activateMs,
    activated: activated.runtime,
    queue,
  };
}

/**
 * Encodes the task message of each dispatch, as the coordinator does before it sends them (the
 * reducer hands over the message's structure): the timed runs measure what a completion costs the
 * coordinator's CPU, encode included.
 */
function encodeMessages(effects: readonly Effect[]): void {
  for (const e of effects) if (e.type === 'dispatch') blackhole = encodeTaskMessage(e.message);
}

function completionOf(taskName: string): CompletionEvent {
  return { type: 'completion', now: T_RUN, taskName, attemptNo: 1, success: true, outputRef: OUTPUT_REF, error: null };
}

function applyEffects(effects: readonly Effect[], queue: Fifo): number {
  let dispatched = 0;
  for (const e of effects) {
    if (e.type === 'dispatch') {
      queue.push(e.taskName);
      dispatched++;
    } else if (e.type === 'ignored') {
      throw new Error(`bench bug: event ignored: ${e.reason}`);
    }
  }
  return dispatched;
}

/** Drives `count` completions untimed (or until the queue is empty). */
function drive(rt: WorkflowRuntime, queue: Fifo, count: number): WorkflowRuntime {
  for (let i = 0; i < count; i++) {
    const name = queue.shift();
    if (name === undefined) break;
    const r = reduce(rt, completionOf(name));
    applyEffects(r.effects, queue);
    rt = r.runtime;
  }
  return rt;
}

// ---------------------------------------------------------------------------------------------
// Measurement

interface Sample {
  /** Completion events delivered, in order (replayed by the batch mode). */
  events: CompletionEvent[];
  /** Time of each `reduce` call alone, ns. */
  eventNs: number[];
  /** Runtime at the batch boundary nearest the middle of the sample. */
  mid: WorkflowRuntime;
  final: WorkflowRuntime;
  /** Per event: task lookups `settle` made over the parents of affected dependents (estimated). */
  settleLookups: number[];
  /** Per event: tasks the dispatch round walked (definition order, up to the last newly ready task). */
  scanLookups: number[];
  dispatched: number;
}

/**
 * Delivers completions one at a time in FIFO order, timing each `reduce` call alone, in whole
 * batches of 32, until `max` events, `budgetMs` of wall time, or the end of the workflow.
 */
function sampleSingle(start: WorkflowRuntime, startQueue: Fifo, info: DefInfo, max: number, budgetMs: number): Sample {
  const queue = startQueue.clone();
  let rt = start;
  const events: CompletionEvent[] = [];
  const eventNs: number[] = [];
  const settleLookups: number[] = [];
  const scanLookups: number[] = [];
  const boundaries: WorkflowRuntime[] = [rt];
  let dispatched = 0;
  const wallStart = performance.now();
  batches: while (events.length + BATCH <= max) {
    if (events.length > 0 && performance.now() - wallStart >= budgetMs) break;
    if (queue.size === 0) break;
    // Stop before a batch that the workflow cannot fill.
    const completed = rt.counts.completed - countCompletedMerges(rt, info);
    if (info.workTasks - completed < BATCH) break;
    for (let j = 0; j < BATCH; j++) {
      const name = queue.shift();
      if (name === undefined) break batches;
      const event = completionOf(name);
      const t0 = nowNs();
      const r = reduce(rt, event);
      encodeMessages(r.effects);
      const t1 = nowNs();
      eventNs.push(Number(t1 - t0));
      events.push(event);
      settleLookups.push(estimateSettleLookups(name, rt, r.runtime, info));
      let scan = 0;
      for (const e of r.effects) if (e.type === 'dispatch') scan = Math.max(scan, (info.position.get(e.taskName) ?? 0) + 1);
      scanLookups.push(scan);
      dispatched += applyEffects(r.effects, queue);
      rt = r.runtime;
    }
    boundaries.push(rt);
  }
  // The last event of a partial batch (queue ran dry) would make the batch mode uneven: cut it.
  const whole = Math.floor(events.length / BATCH) * BATCH;
  events.length = eventNs.length = settleLookups.length = scanLookups.length = whole;
  const midIndex = Math.max(1, Math.round((boundaries.length - 1) / 2));
  return {
    events,
    eventNs,
    mid: boundaries[Math.min(midIndex, boundaries.length - 1)]!,
    final: rt,
    settleLookups,
    scanLookups,
    dispatched,
  };
}

function countCompletedMerges(rt: WorkflowRuntime, info: DefInfo): number {
  if (info.merge.size === 0) return 0;
  let c = 0;
  for (const m of info.merge) if (taskStatus(rt, m) === 'completed') c++;
  return c;
}

/**
 * The parent lookups `settle` makes for one completion of `name`: each dependent that was pending
 * is re-evaluated over all its dependencies and gates; merge nodes completed on the way hand on
 * to their own dependents.
 */
function estimateSettleLookups(name: string, before: WorkflowRuntime, after: WorkflowRuntime, info: DefInfo): number {
  let lookups = 0;
  const stack = [name];
  while (stack.length > 0) {
    const t = stack.pop()!;
    for (const d of info.dependents.get(t) ?? []) {
      if (taskStatus(before, d) !== 'pending') continue;
      lookups += info.parentCount.get(d) ?? 0;
      if (info.merge.has(d) && taskStatus(after, d) === 'completed') stack.push(d);
    }
  }
  return lookups;
}

/** Replays the same events from the same start, folding each group of 32 with foldEvents (the coordinator's path). */
function sampleBatched(start: WorkflowRuntime, events: readonly CompletionEvent[]): { batchNs: number[]; final: WorkflowRuntime } {
  let rt = start;
  const batchNs: number[] = [];
  for (let b = 0; b + BATCH <= events.length; b += BATCH) {
    const batch = events.slice(b, b + BATCH);
    const t0 = nowNs();
    const folded = foldEvents(rt, batch);
    for (const effects of folded.effects) encodeMessages(effects);
    rt = folded.runtime;
    batchNs.push(Number(nowNs() - t0));
  }
  return { batchNs, final: rt };
}

/** Replays `events` from `start` one `reduce` call at a time; the time of each call, ns. */
function replayAlone(start: WorkflowRuntime, events: readonly CompletionEvent[]): number[] {
  let rt = start;
  const eventNs: number[] = [];
  for (const event of events) {
    const t0 = nowNs();
    const r = reduce(rt, event);
    encodeMessages(r.effects);
    rt = r.runtime;
    eventNs.push(Number(nowNs() - t0));
  }
  blackhole = rt;
  return eventNs;
}

/** `first` and more passes of `pass` (at least MIN_PASSES in all, more while under budget); the pass with the median total. */
function medianPass(first: number[], pass: () => number[]): { ns: number[]; fastest: number[]; passes: number } {
  const passes = [first];
  const start = performance.now();
  // No collection between passes: a pass after a full GC and shorter than the young generation
  // would leave its garbage uncollected and uncounted (768 completions at 1k are, 2048 at 100k not).
  while (passes.length < MIN_PASSES || (passes.length < MAX_PASSES && performance.now() - start < PASSES_BUDGET_MS)) passes.push(pass());
  passes.sort((a, b) => sum(a) - sum(b));
  return { ns: passes[passes.length >> 1]!, fastest: passes[0]!, passes: passes.length };
}

interface Codec {
  encodeMs: number;
  decodeMs: number;
  bytes: number;
}

function measureCodec(rt: WorkflowRuntime, large: boolean): Codec {
  const text = encodeRuntime(rt);
  const encodeMs = timeRepeated(() => encodeRuntime(rt), large ? 0 : 400, 15, large ? 1 : 3);
  const decodeMs = timeRepeated(() => decodeRuntime(text), large ? 0 : 400, 15, large ? 1 : 3);
  return { encodeMs, decodeMs, bytes: Buffer.byteLength(text, 'utf8') };
}

interface Breakdown {
  /** `{...runtime.tasks}` of one unchanged object, repeated (V8 may take a clone fast path). */
  spreadUs: number;
  /**
   * What `Draft.setTask` really pays: spread the tasks map, replace one task record, and feed the
   * result to the next round (each copy is of a freshly written object, as in a run of reduce).
   */
  copyWriteUs: number;
  /** One `hasOwnProperty` + status read on the tasks map, as settle and the dispatch round do. */
  lookupNs: number;
  /** For comparison: copying the same entries held in a `Map`. */
  mapCopyUs: number;
}

function measureBreakdown(rt: WorkflowRuntime, definition: WorkflowDefinition): Breakdown {
  const tasks = rt.tasks;
  const spreadUs = 1000 * timeRepeated(() => ({ ...tasks }), 800, 30);
  const names = definition.tasks.map((t) => t.name);
  let chained: Record<string, TaskRuntime> = tasks;
  let i = 0;
  const copyWriteUs =
    1000 *
    timeRepeated(
      () => {
        const next = { ...chained };
        const name = names[i++ % names.length]!;
        next[name] = { ...next[name]!, status: 'completed', completedAt: T_RUN };
        chained = next;
        return next;
      },
      800,
      30,
    );
  const scanMs = timeRepeated(
    () => {
      let ready = 0;
      for (const name of names) {
        const t = Object.prototype.hasOwnProperty.call(tasks, name) ? tasks[name] : undefined;
        if (t?.status === 'ready') ready++;
      }
      return ready;
    },
    300,
    20,
  );
  const asMap = new Map(Object.entries(tasks));
  const mapCopyUs = 1000 * timeRepeated(() => new Map(asMap), 300, 30);
  return { spreadUs, copyWriteUs, lookupNs: (scanMs * 1e6) / names.length, mapCopyUs };
}

// ---------------------------------------------------------------------------------------------
// Fast-forward to 50 % done (a state a FIFO run reaches), without 50 000 reduce calls

/**
 * Plays the FIFO run on a plain model of the DAG (every policy `all`, no conditions, merge nodes
 * complete as soon as ready, tasks made ready by one event are dispatched in definition order)
 * and writes the runtime blob of the state after `k` completions; `decodeRuntime` reads it back.
 * Checked against real `reduce` runs at 1k before use (see `checkFastForward`).
 */
function fastForward(p: Prepared, k: number): { rt: WorkflowRuntime; queue: Fifo } {
  const { info, definition } = p;
  const remaining = new Map<string, number>(info.parentCount);
  type State = { status: 'pending' | 'running' | 'completed'; startedAt?: string; merge?: boolean };
  const state = new Map<string, State>();
  const queue = new Fifo();
  for (const t of definition.tasks) {
    if ((remaining.get(t.name) ?? 0) === 0) {
      state.set(t.name, { status: 'running', startedAt: T_ACTIVATE });
      queue.push(t.name);
    } else {
      state.set(t.name, { status: 'pending' });
    }
  }
  for (let i = 0; i < k; i++) {
    const name = queue.shift();
    if (name === undefined) throw new Error('fast-forward: queue ran dry');
    state.get(name)!.status = 'completed';
    const ready: string[] = [];
    const stack = [name];
    while (stack.length > 0) {
      const t = stack.pop()!;
      for (const d of info.dependents.get(t) ?? []) {
        const left = remaining.get(d)! - 1;
        remaining.set(d, left);
        if (left !== 0) continue;
        if (info.merge.has(d)) {
          state.set(d, { status: 'completed', startedAt: T_RUN, merge: true });
          stack.push(d);
        } else {
          ready.push(d);
        }
      }
    }
    ready.sort((a, b) => info.position.get(a)! - info.position.get(b)!);
    for (const d of ready) {
      state.set(d, { status: 'running', startedAt: T_RUN });
      queue.push(d);
    }
  }
  const blob = JSON.parse(encodeRuntime(p.activated)) as {
    status: string;
    updated_at: string;
    tasks: Record<string, Record<string, unknown>>;
  };
  const tasks: Record<string, Record<string, unknown>> = {};
  for (const t of definition.tasks) {
    const s = state.get(t.name)!;
    if (s.status === 'pending') tasks[t.name] = { status: 'pending' };
    else if (s.status === 'running') tasks[t.name] = { status: 'running', attempt_no: 1, started_at: s.startedAt };
    else if (s.merge) tasks[t.name] = { status: 'completed', started_at: s.startedAt, completed_at: T_RUN };
    else tasks[t.name] = { status: 'completed', attempt_no: 1, output_ref: OUTPUT_REF, started_at: s.startedAt, completed_at: T_RUN };
  }
  blob.tasks = tasks;
  blob.status = 'running';
  if (k > 0) blob.updated_at = T_RUN;
  const decoded = decodeRuntime(JSON.stringify(blob));
  if (!decoded.ok) throw new Error(decoded.error);
  return { rt: decoded.value, queue };
}

/** At 1k: the fast-forwarded state equals, byte for byte, the one `reduce` reaches. */
function checkFastForward(shape: Shape, n: number): void {
  const p = prepare(shape, n);
  const k = Math.floor(p.info.workTasks / 2);
  const queue = p.queue.clone();
  const real = drive(p.activated, queue, k);
  const ff = fastForward(p, k);
  if (encodeRuntime(real) !== encodeRuntime(ff.rt)) throw new Error(`fast-forward check failed for ${shape} ${n}: runtime differs`);
  if (JSON.stringify(queue.toArray()) !== JSON.stringify(ff.queue.toArray()))
    throw new Error(`fast-forward check failed for ${shape} ${n}: queue differs`);
  // Finish the run (more warm-up) and check it ends well.
  const end = drive(real, queue, Number.POSITIVE_INFINITY);
  if (end.status !== 'completed') throw new Error(`${shape} ${n}: workflow ended ${end.status}`);
}

// ---------------------------------------------------------------------------------------------
// CPU profile of a replay: which part of reduce the samples fall in

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

/** Stages of a reduce call; a sample goes to the nearest stage on its stack (self, then callers). */
const STAGES = ['copy', 'settle', 'dispatch', 'messages', 'gc', 'other', 'harness'] as const;
type Stage = (typeof STAGES)[number];
const STAGE_LABEL: Record<Stage, string> = {
  copy: 'Draft.setTask (copy tasks map)',
  settle: 'settle/drain (re-read parents)',
  dispatch: 'dispatchRound (scan)',
  messages: 'task messages (wire encode)',
  gc: 'garbage collector',
  other: 'other reducer code',
  harness: 'bench harness',
};

function stageOf(node: ProfileNode): Stage | null {
  const { functionName: fn, url } = node.callFrame;
  if (fn === '(garbage collector)') return 'gc';
  if (!url.includes('dag-core')) return null;
  if (fn === 'setTask' && url.endsWith('draft.js')) return 'copy';
  if (url.endsWith('settle.js')) return 'settle';
  if (fn === 'taskMessage' || /[\\/]wire[\\/]/.test(url)) return 'messages';
  if (fn === 'dispatchRound') return 'dispatch';
  if (fn === 'reduce') return 'other';
  return null;
}

function post<T>(session: Session, method: string, params: object = {}): Promise<T> {
  const send = session.post.bind(session) as (m: string, p: object, cb: (err: Error | null, result: unknown) => void) => void;
  return new Promise((resolve, reject) => send(method, params, (err, result) => (err ? reject(err) : resolve(result as T))));
}

/** Replays a prefix of `events` (about PROFILE_BUDGET_MS) under the CPU profiler; share of time per stage. */
async function profileReplay(
  start: WorkflowRuntime,
  events: readonly CompletionEvent[],
  meanUs: number,
): Promise<{ events: number; share: Record<Stage, number> }> {
  const count = Math.max(1, Math.min(events.length, Math.ceil((PROFILE_BUDGET_MS * 1000) / meanUs)));
  const session = new Session();
  session.connect();
  try {
    await post(session, 'Profiler.enable');
    await post(session, 'Profiler.setSamplingInterval', { interval: PROFILE_INTERVAL_US });
    await post(session, 'Profiler.start');
    let rt = start;
    for (let i = 0; i < count; i++) {
      const r = reduce(rt, events[i]!);
      encodeMessages(r.effects);
      rt = r.runtime;
    }
    blackhole = rt;
    const { profile } = await post<{ profile: CpuProfile }>(session, 'Profiler.stop');
    await post(session, 'Profiler.disable');
    const parent = new Map<number, number>();
    const byId = new Map<number, ProfileNode>();
    for (const node of profile.nodes) {
      byId.set(node.id, node);
      for (const child of node.children ?? []) parent.set(child, node.id);
    }
    const stageCache = new Map<number, Stage>();
    const resolve = (id: number): Stage => {
      const cached = stageCache.get(id);
      if (cached) return cached;
      let stage: Stage = 'harness';
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const found = stageOf(byId.get(at)!);
        if (found) {
          stage = found;
          break;
        }
      }
      stageCache.set(id, stage);
      return stage;
    };
    const time = Object.fromEntries(STAGES.map((st) => [st, 0])) as Record<Stage, number>;
    const samples = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    let total = 0;
    for (let i = 0; i < samples.length; i++) {
      const dt = Math.max(0, deltas[i + 1] ?? 0);
      time[resolve(samples[i]!)] += dt;
      total += dt;
    }
    const share = Object.fromEntries(STAGES.map((st) => [st, total > 0 ? time[st] / total : NaN])) as Record<Stage, number>;
    return { events: count, share };
  } finally {
    session.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// One case

interface Result {
  shape: Shape;
  n: number;
  tasks: number;
  setup: { buildMs: number; validateMs: number; transformMs: number; createMs: number; activateMs: number };
  firstEventMs: number;
  firstEventDispatched: number;
  warmup: number;
  sample: number;
  single: { meanUs: number; p50Us: number; p99Us: number; perSecond: number; gcUs: number; fastestUs: number };
  batch: { msPerBatch: number; perSecond: number; meanUs: number; fastestUs: number };
  codecMid: Codec;
  midCompleted: number;
  breakdown: Breakdown;
  profile: { events: number; share: Record<Stage, number> };
  settleLookupsPerEvent: number;
  scanLookupsPerEvent: number;
  dispatchedPerEvent: number;
  late: { sample: number; meanUs: number; settleLookupsPerEvent: number; scanLookupsPerEvent: number; codec: Codec; completed: number };
}

async function runCase(shape: Shape, n: number): Promise<Result> {
  const label = `${shape} ${n}`;
  progress(`${label}: build + validate${shape === 'wide/seq1000' ? ' + sequentializeFanIn' : ''} + createRuntime + activate`);
  const p = prepare(shape, n);
  const large = n >= 50000;

  // The first completion: for `wide` the root, whose completion dispatches every leaf (or a batch).
  const queue = p.queue.clone();
  const firstName = queue.shift()!;
  let t0 = performance.now();
  const first = reduce(p.activated, completionOf(firstName));
  encodeMessages(first.effects);
  const firstEventMs = performance.now() - t0;
  const firstEventDispatched = applyEffects(first.effects, queue);
  let rt = first.runtime;

  progress(`${label}: warm-up (first event ${firstEventMs.toFixed(1)} ms, dispatched ${firstEventDispatched})`);
  let warmup = 0;
  t0 = performance.now();
  while (warmup < WARMUP && performance.now() - t0 < WARMUP_BUDGET_MS && queue.size > 0) {
    rt = drive(rt, queue, 1);
    warmup++;
  }
  warmup += 1; // the first event

  collect();
  progress(`${label}: sampling completions one at a time (≤ ${MAX_SAMPLE} or ${SAMPLE_BUDGET_MS / 1000} s)`);
  const gcBefore = await gcPausesSoFar();
  const single = sampleSingle(rt, queue, p.info, MAX_SAMPLE, SAMPLE_BUDGET_MS);
  const gcSingleMs = (await gcPausesSoFar()) - gcBefore;
  const count = single.events.length;
  if (count === 0) throw new Error(`${label}: nothing to sample`);

  collect();
  progress(`${label}: replaying the same ${count} completions in timed batches of ${BATCH}`);
  const batched = sampleBatched(rt, single.events);
  if (JSON.stringify(batched.final.counts) !== JSON.stringify(single.final.counts)) throw new Error(`${label}: batch replay diverged`);

  collect();
  progress(`${label}: more timed passes over the same events (median pass kept)`);
  const alone = medianPass(single.eventNs, () => replayAlone(rt, single.events));
  const batchPass = medianPass(batched.batchNs, () => sampleBatched(rt, single.events).batchNs);

  collect();
  progress(`${label}: CPU-profiled replay (≤ ${PROFILE_BUDGET_MS / 1000} s) for the breakdown`);
  const profile = await profileReplay(rt, single.events, sum(alone.ns) / count / 1000);

  collect();
  progress(`${label}: codec + breakdown at the sample midpoint`);
  const codecMid = measureCodec(single.mid, large);
  const breakdown = measureBreakdown(single.mid, p.definition);

  collect();
  const k = Math.floor(p.info.workTasks / 2);
  progress(`${label}: fast-forward to 50 % done (${k} completions) and sample there`);
  const ff = fastForward(p, k);
  collect();
  const late = sampleSingle(ff.rt, ff.queue, p.info, MAX_SAMPLE, LATE_BUDGET_MS);
  const lateAlone = late.events.length === 0 ? null : medianPass(late.eventNs, () => replayAlone(ff.rt, late.events));
  const lateCodec = measureCodec(ff.rt, large);

  const totalNs = sum(alone.ns);
  const batchTotalNs = sum(batchPass.ns);
  const result: Result = {
    shape,
    n,
    tasks: p.definition.tasks.length,
    setup: { buildMs: p.buildMs, validateMs: p.validateMs, transformMs: p.transformMs, createMs: p.createMs, activateMs: p.activateMs },
    firstEventMs,
    firstEventDispatched,
    warmup,
    sample: count,
    single: {
      meanUs: totalNs / count / 1000,
      p50Us: median(alone.ns) / 1000,
      p99Us: percentile(alone.ns, 99) / 1000,
      perSecond: count / (totalNs / 1e9),
      gcUs: (gcSingleMs * 1000) / count,
      fastestUs: sum(alone.fastest) / count / 1000,
    },
    batch: {
      msPerBatch: batchTotalNs / batchPass.ns.length / 1e6,
      perSecond: count / (batchTotalNs / 1e9),
      meanUs: batchTotalNs / count / 1000,
      fastestUs: sum(batchPass.fastest) / count / 1000,
    },
    codecMid,
    midCompleted: single.mid.counts.completed,
    breakdown,
    profile,
    settleLookupsPerEvent: sum(single.settleLookups) / count,
    scanLookupsPerEvent: sum(single.scanLookups) / count,
    dispatchedPerEvent: single.dispatched / count,
    late: {
      sample: late.events.length,
      meanUs: lateAlone === null ? NaN : sum(lateAlone.ns) / late.events.length / 1000,
      settleLookupsPerEvent: late.events.length === 0 ? NaN : sum(late.settleLookups) / late.events.length,
      scanLookupsPerEvent: late.events.length === 0 ? NaN : sum(late.scanLookups) / late.events.length,
      codec: lateCodec,
      completed: ff.rt.counts.completed,
    },
  };
  progress(
    `${label}: ${result.single.meanUs.toFixed(1)} µs/completion alone, ${result.batch.msPerBatch.toFixed(2)} ms per batch of ${BATCH}; ` +
      `copy+write of tasks ${result.breakdown.copyWriteUs.toFixed(1)} µs`,
  );
  return result;
}

// ---------------------------------------------------------------------------------------------
// Output

type Align = 'l' | 'r';
function table(headers: string[], rows: string[][], align?: Align[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const cell = (text: string, i: number) =>
    (align?.[i] ?? (i === 0 ? 'l' : 'r')) === 'l' ? text.padEnd(widths[i]!) : text.padStart(widths[i]!);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => cell(c, i))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function f(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return '—';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
/** Adaptive precision for times that span 1 µs to 1 s. */
function t(value: number): string {
  if (!Number.isFinite(value)) return '—';
  if (value >= 1000) return f(value, 0);
  if (value >= 100) return f(value, 1);
  return f(value, 2);
}
function size(n: number): string {
  return n >= 1000 ? `${n / 1000}k` : String(n);
}
function mib(bytes: number): string {
  return f(bytes / 1048576, 2);
}
function pct(part: number, whole: number): string {
  return Number.isFinite(part / whole) ? `${f((100 * part) / whole, 0)}%` : '—';
}

function report(results: readonly Result[], totalS: number): void {
  const out: string[] = [];
  out.push('jobq reducer benchmark (@jobq/dag-core reduce / encodeRuntime / decodeRuntime)');
  out.push(
    `node ${process.version}, ${process.platform}/${process.arch}, gc between cases: ${gcHook ? 'yes (--expose-gc)' : 'NO (run with --expose-gc)'}; ` +
      `completions are successes with outputRef '${OUTPUT_REF}', delivered in FIFO dispatch order.`,
  );
  out.push(
    `Shapes: wide = root -> n-2 leaves -> sink (sink has n-2 parents); wide/seq1000 = the same after sequentializeFanIn(def, ${MAX_FAN_IN}) ` +
      `(merge nodes; leaves run in batches of ${MAX_FAN_IN}); layered = n/${LAYER_WIDTH} layers of ${LAYER_WIDTH}, each task on 2-3 tasks of the layer above (LCG, fixed seed).`,
  );
  out.push(
    `Sample: after the first event and a warm-up (≤ ${WARMUP} completions or ${WARMUP_BUDGET_MS / 1000} s), up to ${MAX_SAMPLE} completions, ` +
      `cut at the first batch boundary after ${SAMPLE_BUDGET_MS / 1000} s; "batch32" replays exactly the same events from the same runtime, folding each 32 with foldEvents (one copy of the task map per batch).`,
  );
  out.push(
    `Each mode is timed in ${MIN_PASSES}–${MAX_PASSES} passes over the same events from the same runtime (more while under ${PASSES_BUDGET_MS / 1000} s); the pass with the median total is reported.`,
  );
  out.push('');

  out.push('1. Setup (excluded from the rates) and the first completion');
  out.push(
    table(
      ['shape', 'tasks', 'build ms', 'validate ms', 'seqFanIn ms', 'create ms', 'activate ms', '1st event ms', '1st dispatched'],
      results.map((r) => [
        r.shape,
        size(r.n) + (r.tasks !== r.n ? ` (+${r.tasks - r.n} merge)` : ''),
        t(r.setup.buildMs),
        t(r.setup.validateMs),
        r.setup.transformMs > 0 ? t(r.setup.transformMs) : '—',
        t(r.setup.createMs),
        t(r.setup.activateMs),
        t(r.firstEventMs),
        String(r.firstEventDispatched),
      ]),
    ),
  );
  out.push('');

  out.push('2. Completions through reduce (sample starts right after the warm-up; for wide: leaves after root completed)');
  out.push(
    table(
      [
        'shape',
        'tasks',
        'warm-up',
        'sampled',
        'alone compl/s',
        'alone µs/compl',
        'p50 µs',
        'p99 µs',
        'batch32 compl/s',
        'ms / batch32',
        'batch32 µs/compl',
        'encode ms',
        'decode ms',
        'blob bytes',
        'MiB',
      ],
      results.map((r) => [
        r.shape,
        size(r.n),
        String(r.warmup),
        String(r.sample),
        f(r.single.perSecond, 0),
        t(r.single.meanUs),
        t(r.single.p50Us),
        t(r.single.p99Us),
        f(r.batch.perSecond, 0),
        t(r.batch.msPerBatch),
        t(r.batch.meanUs),
        t(r.codecMid.encodeMs),
        t(r.codecMid.decodeMs),
        f(r.codecMid.bytes, 0),
        mib(r.codecMid.bytes),
      ]),
    ),
  );
  out.push(
    '   encode/decode: one runtime at the batch boundary nearest the middle of the sample (median of repeats below 50k tasks, one run above).',
  );
  out.push('');

  out.push(
    '3. Scaling of the per-completion cost (µs per completion; a flat reducer gives ~1x, O(n) per event gives ~100x from 1k to 100k)',
  );
  const shapes = [...new Set(results.map((r) => r.shape))];
  const sizes = [...new Set(results.map((r) => r.n))].sort((a, b) => a - b);
  const smallest = sizes[0]!;
  const largest = sizes[sizes.length - 1]!;
  out.push(
    table(
      [
        'shape',
        ...sizes.map((n) => `alone ${size(n)}`),
        ...sizes.map((n) => `batch32 ${size(n)}`),
        `alone ${size(largest)}/${size(smallest)}`,
        `batch32 ${size(largest)}/${size(smallest)}`,
      ],
      shapes.map((shape) => {
        const by = (n: number) => results.find((r) => r.shape === shape && r.n === n);
        const lo = by(smallest);
        const hi = by(largest);
        return [
          shape,
          ...sizes.map((n) => t(by(n)?.single.meanUs ?? NaN)),
          ...sizes.map((n) => t(by(n)?.batch.meanUs ?? NaN)),
          lo && hi ? `${f(hi.single.meanUs / lo.single.meanUs, 2)}x` : '—',
          lo && hi ? `${f(hi.batch.meanUs / lo.batch.meanUs, 2)}x` : '—',
        ];
      }),
    ),
  );
  out.push('3b. The same with the fastest pass of each case (least disturbed by other processes on a shared machine)');
  out.push(
    table(
      [
        'shape',
        ...sizes.map((n) => `alone ${size(n)}`),
        ...sizes.map((n) => `batch32 ${size(n)}`),
        `alone ${size(largest)}/${size(smallest)}`,
        `batch32 ${size(largest)}/${size(smallest)}`,
      ],
      shapes.map((shape) => {
        const by = (n: number) => results.find((r) => r.shape === shape && r.n === n);
        const lo = by(smallest);
        const hi = by(largest);
        return [
          shape,
          ...sizes.map((n) => t(by(n)?.single.fastestUs ?? NaN)),
          ...sizes.map((n) => t(by(n)?.batch.fastestUs ?? NaN)),
          lo && hi ? `${f(hi.single.fastestUs / lo.single.fastestUs, 2)}x` : '—',
          lo && hi ? `${f(hi.batch.fastestUs / lo.batch.fastestUs, 2)}x` : '—',
        ];
      }),
    ),
  );
  out.push('');

  out.push("4. Where a completion's time goes");
  out.push('4a. CPU profile of a replay of the first sampled completions (share of profiled time; µs = share x alone µs/compl)');
  out.push(
    table(
      ['shape', 'tasks', 'replayed', 'µs/compl', ...STAGES.filter((st) => st !== 'harness').map((st) => STAGE_LABEL[st]), 'harness'],
      results.map((r) => [
        r.shape,
        size(r.n),
        String(r.profile.events),
        t(r.single.meanUs),
        ...STAGES.filter((st) => st !== 'harness').map(
          (st) => `${pct(r.profile.share[st], 1)} ${t(r.profile.share[st] * r.single.meanUs).padStart(7)}`,
        ),
        pct(r.profile.share.harness, 1),
      ]),
    ),
  );
  out.push(
    [
      '   Each sample is charged to the nearest of these functions on its stack: Draft.setTask (the {...tasks} copy on the first change of a call),',
      '   settle.js (re-evaluating pending dependents over all their parents), dispatchRound (walking tasks in definition order), the wire',
      '   encoders (task messages), else reduce itself ("other"). GC pauses are mostly the garbage of the copies.',
    ].join('\n'),
  );
  out.push('');
  out.push('4b. Micro-measures at the sample midpoint');
  out.push(
    table(
      [
        'shape',
        'tasks',
        'µs/compl',
        'copy+write µs',
        'copy share',
        '{...tasks} µs',
        'Map copy µs',
        'settle lookups/compl',
        'scan lookups/compl',
        'ns/lookup',
        'GC pauses µs/compl',
      ],
      results.map((r) => [
        r.shape,
        size(r.n),
        t(r.single.meanUs),
        t(r.breakdown.copyWriteUs),
        pct(r.breakdown.copyWriteUs, r.single.meanUs),
        t(r.breakdown.spreadUs),
        t(r.breakdown.mapCopyUs),
        f(r.settleLookupsPerEvent, 0),
        f(r.scanLookupsPerEvent, 0),
        f(r.breakdown.lookupNs, 1),
        t(r.single.gcUs),
      ]),
    ),
  );
  out.push(
    [
      '   copy+write: spread runtime.tasks, replace one task record, feed the result to the next round: what Draft.setTask does once per call.',
      '   {...tasks}: a plain spread repeated on one unchanged object. Below ~1020 keys V8 keeps the map in fast-properties mode and can clone',
      '     it almost for free, but the reducer writes into every copy, which is far dearer (see copy+write); above, both are hash-table copies.',
      "   Map copy: new Map(sameEntries), for comparison. settle lookups: parents re-read per completion (the sink's n-2 in `wide`).",
      '   scan lookups: tasks the dispatch round walks per completion (definition order, up to the last newly ready task).',
      '   ns/lookup: hasOwnProperty + status read over all tasks in definition order. GC pauses: observed during the "alone" sample.',
    ].join('\n'),
  );
  out.push('');

  out.push(
    '5. Late in the run: state fast-forwarded to 50 % of the completions (model of the FIFO run written as a runtime blob and read by decodeRuntime; checked byte-for-byte against reduce at 1k)',
  );
  out.push(
    table(
      [
        'shape',
        'tasks',
        'completed',
        'sampled',
        'µs/compl',
        'vs early',
        'settle lookups/evt',
        'dispatch-scan lookups/evt',
        'encode ms',
        'decode ms',
        'blob bytes',
        'MiB',
      ],
      results.map((r) => [
        r.shape,
        size(r.n),
        String(r.late.completed),
        String(r.late.sample),
        t(r.late.meanUs),
        `${f(r.late.meanUs / r.single.meanUs, 2)}x`,
        f(r.late.settleLookupsPerEvent, 0),
        f(r.late.scanLookupsPerEvent, 0),
        t(r.late.codec.encodeMs),
        t(r.late.codec.decodeMs),
        f(r.late.codec.bytes, 0),
        mib(r.late.codec.bytes),
      ]),
    ),
  );
  out.push('');

  out.push('6. Where the time goes at the largest size');
  for (const shape of shapes) {
    const r = results.find((x) => x.shape === shape && x.n === largest);
    const lo = results.find((x) => x.shape === shape && x.n === smallest);
    if (!r) continue;
    const us = (st: Stage) => r.profile.share[st] * r.single.meanUs;
    const copyUs = us('copy');
    const copyGcUs = copyUs + us('gc');
    const withoutCopy = Math.max(0, r.single.meanUs - copyGcUs);
    const copyOncePer32 = withoutCopy + copyGcUs / BATCH;
    out.push(
      wrap(
        `${shape} ${size(r.n)}: a completion costs ${t(r.single.meanUs)} µs (${f(r.single.perSecond, 0)}/s)` +
          (lo && lo !== r ? `, ${f(r.single.meanUs / lo.single.meanUs, 0)}x the ${t(lo.single.meanUs)} µs at ${size(lo.n)}` : '') +
          `. By the profile, ${pct(r.profile.share.copy, 1)} (~${t(copyUs)} µs) is Draft.setTask copying the ${r.tasks}-key tasks map and ${pct(r.profile.share.gc, 1)} (~${t(us('gc'))} µs) is GC` +
          ` (a bare {...runtime.tasks} takes ${t(r.breakdown.spreadUs)} µs, copy+write ${t(r.breakdown.copyWriteUs)} µs, a Map of the same entries ${t(r.breakdown.mapCopyUs)} µs)` +
          `; settle is ${pct(r.profile.share.settle, 1)} (~${t(us('settle'))} µs, ${f(r.settleLookupsPerEvent, 0)} parent lookups per completion)` +
          `, the dispatch scan ${pct(r.profile.share.dispatch, 1)} (${f(r.scanLookupsPerEvent, 0)} tasks walked per completion early, ${f(r.late.scanLookupsPerEvent, 0)} at 50 % done)` +
          `, task messages ${pct(r.profile.share.messages, 1)}, other reducer code ${pct(r.profile.share.other, 1)}. ` +
          `foldEvents copies once per batch: ${t(r.batch.msPerBatch)} ms per 32 = ${t(r.batch.meanUs)} µs each (the profile predicted ~${t(copyOncePer32)} µs); ` +
          `with no copy at all it would be ~${t(withoutCopy)} µs` +
          (r.profile.share.settle > 0.2 ? ' (then the O(fan-in) settle dominates)' : '') +
          `. The runtime blob at 50 % done is ${mib(r.late.codec.bytes)} MiB (encode ${t(r.late.codec.encodeMs)} ms, decode ${t(r.late.codec.decodeMs)} ms).`,
        110,
      ),
    );
    out.push('');
  }
  out.push(`Total bench time ${f(totalS, 1)} s.`);
  process.stdout.write(out.join('\n') + '\n');
}

function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line.length > 0 && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line.length === 0 ? word : `${line} ${word}`;
    }
  }
  if (line.length > 0) lines.push(line);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const { sizes, shapes } = parseArgs();
  if (!gcHook) progress('global.gc is not exposed: run node with --expose-gc for steadier numbers');
  progress('global warm-up + fast-forward check: full runs of every shape at 1k through reduce');
  for (const shape of ALL_SHAPES) checkFastForward(shape, 1000);
  const results: Result[] = [];
  for (const n of [...sizes].sort((a, b) => a - b)) {
    for (const shape of shapes) {
      collect();
      results.push(await runCase(shape, n));
    }
  }
  void blackhole;
  report(results, (performance.now() - START) / 1000);
  gcObserver.disconnect();
  progress('done');
}

main().catch((error: unknown) => {
  process.stderr.write(`${failureText(error)}\n`);
  process.exitCode = 1;
});
