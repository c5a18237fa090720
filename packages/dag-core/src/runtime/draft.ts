import {
  COUNTER_GROUP_MASK,
  COUNTER_GROUP_SHIFT,
  M_AWAITING,
  M_DELAYED_RUNNING,
  M_TIMED_RUNNING,
  SEGMENT_MASK,
  SEGMENT_SHIFT,
  STATUS_CLASS,
  STATUS_INDEX,
  S_READY,
  S_RUNNING,
  coreOf,
  isDelayedRunning,
  makeRuntime,
  statusIndex,
  type Chunk,
  type RuntimeFields,
  type TaskCore,
} from './core';
import type { GraphIndex } from './graph-index';
import type { TaskCounts, TaskRuntime, WorkflowRuntime } from './types';

/** The workflow-level fields of a draft, and its counts. */
export type DraftFields = RuntimeFields & { counts: TaskCounts };

/**
 * A copy-on-write working copy of a runtime for one `reduce` or `foldEvents` call (or one
 * `withTaskStates`): the input is never touched. The first write under a root, segment or chunk
 * copies it (once per draft), and unchanged calls hand back the very object they were given. A
 * task's change of status keeps the counts, the per-chunk sets and its dependents' parent counters
 * in step, along its own dependent edges.
 */
export class Draft {
  readonly runtime: DraftFields;
  readonly index: GraphIndex;
  /** Number of changes made so far; a call changed something when this moved. */
  changes = 0;
  /** No task before this position is ready. */
  readyFrom: number;
  /** Tasks running as a delayed retry, in all. */
  delayed: number;
  private readonly baseCore: TaskCore;
  private readonly shift: number;
  private readonly mask: number;
  /** The root of segments: the base's until the first write, then this draft's copy. */
  private segments: Chunk[][];
  private countsCopied = false;
  /** Positions written, in order, with repeats. */
  private readonly touched: number[] = [];

  constructor(readonly base: WorkflowRuntime) {
    const core = coreOf(base);
    this.baseCore = core;
    this.index = core.index;
    this.shift = core.index.chunkShift;
    this.mask = (1 << this.shift) - 1;
    this.segments = core.segments as Chunk[][];
    this.readyFrom = core.readyFrom;
    this.delayed = core.delayed;
    this.runtime = {
      workflowId: base.workflowId,
      definition: base.definition,
      outputsContainer: base.outputsContainer,
      status: base.status,
      activated: base.activated,
      cancelRequested: base.cancelRequested,
      cancelAppliedAt: base.cancelAppliedAt,
      retryAppliedAt: base.retryAppliedAt,
      createdAt: base.createdAt,
      updatedAt: base.updatedAt,
      finishedAt: base.finishedAt,
      corruptReason: base.corruptReason,
      deadlineAt: base.deadlineAt,
      cancelReason: base.cancelReason,
      rerunsApplied: base.rerunsApplied,
      traceparent: base.traceparent,
      counts: base.counts,
    };
  }

  get changed(): boolean {
    return this.changes > 0;
  }

  /** The state of the task at `position`. */
  task(position: number): TaskRuntime {
    const c = position >> this.shift;
    return this.segments[c >> SEGMENT_SHIFT]![c & SEGMENT_MASK]!.states[position & this.mask]!;
  }

  /** The position of task `name`, or undefined when the definition has no such task. */
  positionOf(name: string): number | undefined {
    return this.index.positionOf(name);
  }

  /** Derived count `i` of chunk `c` (see core.ts). */
  chunkCount(c: number, i: number): number {
    return this.segments[c >> SEGMENT_SHIFT]![c & SEGMENT_MASK]!.counts[i]!;
  }

  /** Parent counter `k` (`C_*`) of the hub at `position` (`index.hubSlot[position] >= 0`). */
  counter(position: number, k: number): number {
    const c = position >> this.shift;
    const at = 4 * this.index.hubSlot[position]! + k;
    return this.segments[c >> SEGMENT_SHIFT]![c & SEGMENT_MASK]!.counters[at >> COUNTER_GROUP_SHIFT]![at & COUNTER_GROUP_MASK]!;
  }

  /**
   * The positions, in definition order, of the tasks that `keep` accepts, looking only into chunks
   * that `inChunk` accepts from their counts: O(chunks + tasks of the chunks looked into).
   */
  positions(inChunk: (counts: readonly number[]) => boolean, keep: (state: TaskRuntime, position: number) => boolean): number[] {
    const found: number[] = [];
    for (let s = 0; s < this.segments.length; s++) {
      const segment = this.segments[s]!;
      for (let i = 0; i < segment.length; i++) {
        const chunk = segment[i]!;
        if (!inChunk(chunk.counts)) continue;
        const start = ((s << SEGMENT_SHIFT) + i) << this.shift;
        const states = chunk.states;
        for (let o = 0; o < states.length; o++) if (keep(states[o]!, start + o)) found.push(start + o);
      }
    }
    return found;
  }

  /** Replaces a task's record (records are never mutated) and keeps the derived data in step. */
  setTask(position: number, next: TaskRuntime): void {
    const c = position >> this.shift;
    const chunk = this.chunk(c);
    let states = chunk.states;
    if (states === this.baseChunk(c).states) states = chunk.states = states.slice();
    const o = position & this.mask;
    const previous = states[o]!;
    states[o] = next;
    this.touched.push(position);
    this.changes++;
    if (previous.status !== next.status) this.moveStatus(position, c, previous, next);
    if (previous.awaitingInputs !== next.awaitingInputs) this.counts(c)[M_AWAITING]! += next.awaitingInputs ? 1 : -1;
    const delayed = isDelayedRunning(next);
    if (isDelayedRunning(previous) !== delayed) {
      this.counts(c)[M_DELAYED_RUNNING]! += delayed ? 1 : -1;
      this.delayed += delayed ? 1 : -1;
    }
  }

  /** Merges changes into a task's record. */
  updateTask(position: number, patch: Partial<TaskRuntime>): void {
    this.setTask(position, { ...this.task(position), ...patch });
  }

  set<K extends keyof RuntimeFields>(key: K, value: RuntimeFields[K]): void {
    const fields: RuntimeFields = this.runtime;
    if (fields[key] === value) return;
    fields[key] = value;
    this.changes++;
  }

  /** The runtime the draft has become: the base object itself when nothing changed. */
  finish(): WorkflowRuntime {
    if (this.changes === 0) return this.base;
    const base = this.baseCore;
    const core: TaskCore =
      this.segments === base.segments
        ? base
        : {
            index: this.index,
            segments: this.segments,
            chunks: base.chunks,
            readyFrom: this.readyFrom,
            delayed: this.delayed,
            view: undefined,
          };
    return makeRuntime(this.runtime, this.runtime.counts, core);
  }

  /** The positions written so far, in definition order, each once. */
  changedPositions(): number[] {
    const list = this.touched;
    let sorted = true;
    for (let i = 1; i < list.length && sorted; i++) sorted = list[i - 1]! < list[i]!;
    if (sorted) return list.slice();
    const ordered = Int32Array.from(list).sort();
    const out: number[] = [];
    for (let i = 0; i < ordered.length; i++) if (i === 0 || ordered[i] !== ordered[i - 1]) out.push(ordered[i]!);
    return out;
  }

  /** The base runtime's chunk `c`. */
  private baseChunk(c: number): Chunk {
    return this.baseCore.segments[c >> SEGMENT_SHIFT]![c & SEGMENT_MASK]!;
  }

  /**
   * Chunk `c`, writable: the root, the segment and the chunk object still shared with the base
   * runtime are copied on the way (a chunk's arrays are copied by the caller on their own first
   * write). What this draft copied is exactly what differs from the base: no bookkeeping needed.
   */
  private chunk(c: number): Chunk {
    const base = this.baseCore.segments;
    if (this.segments === base) this.segments = base.slice() as Chunk[][];
    const s = c >> SEGMENT_SHIFT;
    let segment = this.segments[s]!;
    if (segment === base[s]) segment = this.segments[s] = segment.slice();
    const i = c & SEGMENT_MASK;
    let chunk = segment[i]!;
    if (chunk === base[s]![i]) chunk = segment[i] = { states: chunk.states, counts: chunk.counts, counters: chunk.counters };
    return chunk;
  }

  /** The counts of chunk `c`, writable. */
  private counts(c: number): number[] {
    const chunk = this.chunk(c);
    if (chunk.counts === this.baseChunk(c).counts) chunk.counts = chunk.counts.slice();
    return chunk.counts;
  }

  /** Counter group `g` of chunk `c`, writable. */
  private counters(c: number, g: number): number[] {
    const chunk = this.chunk(c);
    const base = this.baseChunk(c).counters;
    if (chunk.counters === base) chunk.counters = base.slice();
    let group = chunk.counters[g]!;
    if (group === base[g]) group = chunk.counters[g] = group.slice();
    return group;
  }

  private moveStatus(position: number, c: number, previous: TaskRuntime, next: TaskRuntime): void {
    const from = STATUS_INDEX[previous.status];
    const to = statusIndex(next);
    const counts = this.counts(c);
    counts[from]!--;
    counts[to]!++;
    if (this.index.timed[position] === 1) {
      if (from === S_RUNNING) counts[M_TIMED_RUNNING]!--;
      if (to === S_RUNNING) counts[M_TIMED_RUNNING]!++;
    }
    if (to === S_READY && position < this.readyFrom) this.readyFrom = position;
    if (!this.countsCopied) {
      this.runtime.counts = { ...this.runtime.counts };
      this.countsCopied = true;
    }
    this.runtime.counts[previous.status]--;
    this.runtime.counts[next.status]++;
    const fromClass = STATUS_CLASS[from]!;
    const toClass = STATUS_CLASS[to]!;
    if (fromClass === toClass) return;
    // The hubs' counters: one step along each of this task's edges to a hub.
    const { hubEdgeStart, hubEdgeChunk, hubEdgeAt } = this.index;
    for (let e = hubEdgeStart[position]!; e < hubEdgeStart[position + 1]!; e++) {
      const at = hubEdgeAt[e]!;
      const counters = this.counters(hubEdgeChunk[e]!, at >> COUNTER_GROUP_SHIFT);
      const place = at & COUNTER_GROUP_MASK;
      if (fromClass !== 0) counters[place + fromClass - 1]!--;
      if (toClass !== 0) counters[place + toClass - 1]!++;
    }
  }
}
