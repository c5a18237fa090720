import { graphIndex, type GraphIndex } from './graph-index';
import { TASK_STATUSES, type TaskCounts, type TaskRuntime, type TaskStatus, type WorkflowRuntime } from './types';

/**
 * How a runtime holds its task states: by definition position, in a persistent structure, with
 * derived data the reducer keeps in step, so that one completion costs the same at 1 000 tasks as
 * at 1 000 000.
 *
 * Tasks are grouped in chunks of `1 << index.chunkShift` (256) consecutive positions, chunks in
 * segments of `1 << SEGMENT_SHIFT` (64) chunks, under one root array of segments. A change copies
 * the root, the segment and the chunk on the way to the task, each once per reduce/fold call (a
 * few hundred pointers in all, whatever the size of the workflow); everything else is shared with
 * the runtime it came from, which stays valid and unchanged. A chunk holds:
 *
 * - `states`: the task records;
 * - `counts`: per status, how many tasks of the chunk have it (`STATUS_INDEX` order), then how many
 *   wait for condition inputs (`M_AWAITING`), how many run with a timeout (`M_TIMED_RUNNING`) and
 *   how many run as a delayed retry (`M_DELAYED_RUNNING`): the sets the dispatch round, activate,
 *   cancel, retry and the sweep walk, skipping empty chunks;
 * - `counters`: four numbers (`C_*`) per hub of the chunk — a task with more parents than
 *   `index.hubThreshold` (8) —: its dependencies that satisfy / block it and its gates that
 *   satisfy / block it; in groups of 16 hubs (`COUNTER_GROUP_SHIFT`), each copied on its own. `settle` decides a hub's policy from them in O(1) whatever its fan-in, and
 *   a task's change of status updates them along its own edges to hubs only. A task with few
 *   parents is settled by reading them.
 *
 * Each of the three is copied on its own first write (plain arrays: they stay on the JS heap, where
 * copying a few KB is cheap). `readyFrom`: no task before this position is `ready` (the dispatch
 * round starts there). None of it is stored: `assembleRuntime` derives it from the task states in
 * O(tasks + edges).
 */
export interface TaskCore {
  readonly index: GraphIndex;
  readonly segments: ReadonlyArray<readonly Chunk[]>;
  /** Number of chunks. */
  readonly chunks: number;
  readonly readyFrom: number;
  /** Tasks running as a delayed retry, in all (the sum of the chunks' `M_DELAYED_RUNNING`). */
  readonly delayed: number;
  /** The `tasks` record, built on first read (a cache, not state). */
  view: Readonly<Record<string, TaskRuntime>> | undefined;
}

/** One chunk of a core (mutable only inside the draft that created it). */
export interface Chunk {
  states: TaskRuntime[];
  counts: number[];
  /** Four per hub of the chunk, by `index.hubSlot`, in groups of 16 hubs (64 numbers). */
  counters: number[][];
}

/** A hub's counters sit at `4 * slot + C_*` of its chunk: group `at >> 6`, place `at & 63`. */
export const COUNTER_GROUP_SHIFT = 6;
export const COUNTER_GROUP_MASK = (1 << COUNTER_GROUP_SHIFT) - 1;

/** Chunks per segment: 1 << 6 = 64. */
export const SEGMENT_SHIFT = 6;
export const SEGMENT_MASK = (1 << SEGMENT_SHIFT) - 1;

/** Index of each status in a chunk's counts. */
export const STATUS_INDEX: Readonly<Record<TaskStatus, number>> = Object.freeze({
  pending: 0,
  ready: 1,
  running: 2,
  completed: 3,
  failed: 4,
  upstream_failed: 5,
  skipped: 6,
  cancelled: 7,
});
export const S_PENDING = 0;
export const S_READY = 1;
export const S_RUNNING = 2;
export const S_FAILED = 4;
export const S_UPSTREAM_FAILED = 5;
export const S_CANCELLED = 7;
/** Tasks of the chunk with `awaitingInputs`. */
export const M_AWAITING = 8;
/** Running tasks of the chunk that have a timeout. */
export const M_TIMED_RUNNING = 9;
/** Running tasks of the chunk whose attempt was sent with a delay (`retryDueAt` set). */
export const M_DELAYED_RUNNING = 10;
const COUNTS_LENGTH = 11;

/** A running task whose attempt was sent with a delay: it may still be waiting for its queue to deliver it. */
export function isDelayedRunning(state: TaskRuntime): boolean {
  return state.status === 'running' && state.retryDueAt !== null;
}
/** Dependencies that are completed or skipped. */
export const C_DEP_SATISFIED = 0;
/** Dependencies that failed, were upstream_failed or cancelled. */
export const C_DEP_BLOCKING = 1;
/** Gates that are completed or skipped. */
export const C_GATE_SATISFIED = 2;
/** Gates that failed, were upstream_failed or cancelled. */
export const C_GATE_BLOCKING = 3;

/** 0: neither, 1: satisfying (completed, skipped), 2: blocking (failed, upstream_failed, cancelled); by status index. */
export const STATUS_CLASS: Readonly<Int8Array> = Int8Array.from([0, 0, 0, 1, 2, 2, 1, 2]);

/** A runtime's core lives under this key: not enumerable, so copies, `toEqual` and JSON never see it. */
const CORE = Symbol('jobq.runtime.core');

type WithCore = WorkflowRuntime & { [CORE]?: TaskCore };

/** Cores derived for runtimes built by hand (a `{ ...runtime }` copy): keyed by the object. */
const adopted = new WeakMap<object, TaskCore>();

/** The workflow-level fields of a runtime: everything but its task states and their counts. */
export type RuntimeFields = Omit<WorkflowRuntime, 'tasks' | 'counts'>;

function readTasks(this: WorkflowRuntime): Readonly<Record<string, TaskRuntime>> {
  return tasksView(coreOf(this));
}

const TASKS_PROPERTY: PropertyDescriptor = Object.freeze({ get: readTasks, enumerable: true });

/**
 * A runtime object: the workflow-level fields and `counts` as plain enumerable data, `tasks` as an
 * enumerable getter of the lazily built view, and the core under a non-enumerable symbol.
 */
export function makeRuntime(fields: RuntimeFields, counts: TaskCounts, core: TaskCore): WorkflowRuntime {
  const rt = {
    workflowId: fields.workflowId,
    definition: fields.definition,
    outputsContainer: fields.outputsContainer,
    status: fields.status,
    activated: fields.activated,
    cancelRequested: fields.cancelRequested,
    cancelAppliedAt: fields.cancelAppliedAt,
    retryAppliedAt: fields.retryAppliedAt,
    createdAt: fields.createdAt,
    updatedAt: fields.updatedAt,
    finishedAt: fields.finishedAt,
    corruptReason: fields.corruptReason,
    deadlineAt: fields.deadlineAt,
    cancelReason: fields.cancelReason,
    rerunsApplied: fields.rerunsApplied,
    traceparent: fields.traceparent,
  } as WorkflowRuntime;
  Object.defineProperty(rt, 'tasks', TASKS_PROPERTY);
  rt.counts = counts;
  Object.defineProperty(rt, CORE, { value: core });
  return rt;
}

/**
 * The core of a runtime. A runtime built by hand from another one's enumerable fields (a spread
 * copy: the core does not travel with it) gets one derived from its `tasks` record, in
 * O(tasks + edges), once per object.
 */
export function coreOf(runtime: WorkflowRuntime): TaskCore {
  const own = (runtime as WithCore)[CORE];
  if (own !== undefined) return own;
  let core = adopted.get(runtime);
  if (!core) {
    const index = graphIndex(runtime.definition);
    const record = runtime.tasks;
    const states = index.tasks.map((def) => {
      const state = Object.prototype.hasOwnProperty.call(record, def.name) ? record[def.name] : undefined;
      if (state === undefined) throw new RangeError(`runtime of workflow "${runtime.workflowId}": task "${def.name}" has no state`);
      return state;
    });
    core = buildCore(index, states);
    adopted.set(runtime, core);
  }
  return core;
}

/** Chunk `c` of a core. */
export function chunkOf(core: TaskCore, c: number): Chunk {
  return core.segments[c >> SEGMENT_SHIFT]![c & SEGMENT_MASK]!;
}

/** The state of the task at `position` (which must be a position of the definition). */
export function stateAt(core: TaskCore, position: number): TaskRuntime {
  const shift = core.index.chunkShift;
  return chunkOf(core, position >> shift).states[position & ((1 << shift) - 1)]!;
}

/** Calls `visit` with each chunk of a core and the position of its first task, in order. */
export function forEachChunk(core: TaskCore, visit: (chunk: Chunk, start: number, c: number) => void): void {
  const shift = core.index.chunkShift;
  for (let s = 0; s < core.segments.length; s++) {
    const segment = core.segments[s]!;
    for (let i = 0; i < segment.length; i++) {
      const c = (s << SEGMENT_SHIFT) + i;
      visit(segment[i]!, c << shift, c);
    }
  }
}

/** The `tasks` record of a core, built on first use: O(tasks), for tests and old callers only. */
export function tasksView(core: TaskCore): Readonly<Record<string, TaskRuntime>> {
  if (core.view === undefined) {
    const view: Record<string, TaskRuntime> = {};
    const { tasks } = core.index;
    forEachChunk(core, (chunk, start) => {
      for (let o = 0; o < chunk.states.length; o++) view[tasks[start + o]!.name] = chunk.states[o]!;
    });
    core.view = Object.freeze(view);
  }
  return core.view;
}

/** The status index of a state, checked. */
export function statusIndex(state: TaskRuntime): number {
  if (!Object.prototype.hasOwnProperty.call(STATUS_INDEX, state.status))
    throw new RangeError(`unknown task status ${JSON.stringify(state.status)}`);
  return STATUS_INDEX[state.status];
}

/** An array of `length` zeros, packed (no holes), so that copies of it stay fast. */
function zeros(length: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < length; i++) out.push(0);
  return out;
}

/** The core of task states given in definition order, with everything derived: O(tasks + edges). */
export function buildCore(index: GraphIndex, states: readonly TaskRuntime[]): TaskCore {
  const shift = index.chunkShift;
  const size = index.size;
  const nChunks = (size + (1 << shift) - 1) >> shift;
  const all: Chunk[] = [];
  let readyFrom = size;
  let delayed = 0;
  for (let c = 0; c < nChunks; c++) {
    const start = c << shift;
    const length = Math.min(1 << shift, size - start);
    const counts = zeros(COUNTS_LENGTH);
    for (let o = 0; o < length; o++) {
      const state = states[start + o]!;
      const s = statusIndex(state);
      counts[s]!++;
      if (state.awaitingInputs) counts[M_AWAITING]!++;
      if (s === S_RUNNING && index.timed[start + o] === 1) counts[M_TIMED_RUNNING]!++;
      if (isDelayedRunning(state)) {
        counts[M_DELAYED_RUNNING]!++;
        delayed++;
      }
      if (s === S_READY && readyFrom === size) readyFrom = start + o;
    }
    const counters: number[][] = [];
    for (let left = 4 * index.chunkHubs[c]!; left > 0; left -= 1 << COUNTER_GROUP_SHIFT)
      counters.push(zeros(Math.min(left, 1 << COUNTER_GROUP_SHIFT)));
    all.push({ states: states.slice(start, start + length), counts, counters });
  }
  // Each finished task counts once per edge towards the hubs below it.
  for (let p = 0; p < size; p++) {
    const cls = STATUS_CLASS[STATUS_INDEX[states[p]!.status]]!;
    if (cls === 0) continue;
    for (let e = index.hubEdgeStart[p]!; e < index.hubEdgeStart[p + 1]!; e++) {
      const at = index.hubEdgeAt[e]! + cls - 1;
      all[index.hubEdgeChunk[e]!]!.counters[at >> COUNTER_GROUP_SHIFT]![at & COUNTER_GROUP_MASK]!++;
    }
  }
  const segments: Chunk[][] = [];
  for (let c = 0; c < nChunks; c += 1 << SEGMENT_SHIFT) segments.push(all.slice(c, c + (1 << SEGMENT_SHIFT)));
  return { index, segments, chunks: nChunks, readyFrom, delayed, view: undefined };
}

/** Counts per status of a core's task states. */
export function countStatuses(core: TaskCore): TaskCounts {
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as TaskCounts;
  forEachChunk(core, (chunk) => TASK_STATUSES.forEach((s, i) => (counts[s] += chunk.counts[i]!)));
  return counts;
}

/**
 * Checks a core against one derived afresh from its task states (for tests): every count and
 * counter, and that no task before `readyFrom` is ready. Returns the differences found.
 */
export function checkCore(core: TaskCore): string[] {
  const states: TaskRuntime[] = [];
  forEachChunk(core, (chunk) => states.push(...chunk.states));
  if (states.length !== core.index.size) return [`${states.length} states for ${core.index.size} tasks`];
  const fresh = buildCore(core.index, states);
  const problems: string[] = [];
  if (fresh.chunks !== core.chunks) problems.push(`${core.chunks} chunks, expected ${fresh.chunks}`);
  forEachChunk(fresh, (expected, _start, c) => {
    const have = chunkOf(core, c);
    const compare = (what: string, mine: readonly number[] | undefined, theirs: readonly number[]) => {
      if (mine?.length !== theirs.length) problems.push(`chunk ${c}: ${what} of length ${mine?.length}, expected ${theirs.length}`);
      theirs.forEach((value, i) => {
        if (mine?.[i] !== value) problems.push(`chunk ${c}: ${what}[${i}] is ${mine?.[i]}, expected ${value}`);
      });
    };
    compare('counts', have.counts, expected.counts);
    if (have.counters.length !== expected.counters.length)
      problems.push(`chunk ${c}: ${have.counters.length} counter groups, expected ${expected.counters.length}`);
    expected.counters.forEach((group, g) => compare(`counters[${g}]`, have.counters[g], group));
  });
  if (fresh.readyFrom < core.readyFrom) problems.push(`task ${fresh.readyFrom} is ready but readyFrom is ${core.readyFrom}`);
  if (fresh.delayed !== core.delayed) problems.push(`${core.delayed} delayed retries counted, expected ${fresh.delayed}`);
  return problems;
}
