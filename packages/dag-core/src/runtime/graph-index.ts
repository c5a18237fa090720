import type { Failed, Result } from '../result';
import { compileCondition, type CompiledCondition } from '../condition';
import { isMergeNode } from '../definition/semantics';
import { taskTimeoutS, type TaskDefinition, type WorkflowDefinition } from '../definition/types';
import { realUpstreamTasks } from '../transform/fan-in';

/**
 * Facts derived from a definition that the reducer needs on every call: who depends on whom, by
 * definition position; which tasks are merge nodes, roots or sinks, which have a timeout; compiled
 * conditions. Computed once per definition object in O(tasks + edges) and remembered (a definition
 * is never mutated), so a reduce call costs what the event touches, not the size of the workflow.
 */
export interface GraphIndex {
  readonly tasks: readonly TaskDefinition[];
  readonly size: number;
  /** The position of task `name`, or undefined when the definition has no such task. */
  positionOf(name: string): number | undefined;
  /**
   * Dependents by position, as a compressed adjacency list: the edges of task `p` are
   * `outStart[p] .. outStart[p + 1] - 1`; `outChild[e]` is the dependent's position and
   * `outGate[e]` is 1 when the edge is a gate (0: a `dependsOn` edge). A dependent is listed once
   * per edge, in definition order, its `dependsOn` edge before its gate edge.
   */
  readonly outStart: Int32Array;
  readonly outChild: Int32Array;
  readonly outGate: Uint8Array;
  /**
   * Parents by position, as compressed lists: the dependencies of task `p` are
   * `depParent[depStart[p] .. depStart[p + 1] - 1]` and its gates `gateParent[gateStart[p] ..]`, in
   * the order of the definition; -1 for a name the definition does not have.
   */
  readonly depStart: Int32Array;
  readonly depParent: Int32Array;
  readonly gateStart: Int32Array;
  readonly gateParent: Int32Array;
  /**
   * Tasks with more than `hubThreshold` dependencies and gates ("hubs") keep counters of their
   * satisfying and blocking parents, updated along each parent's edges; the others read their few
   * parents when they are settled. `hubSlot[p]` is the hub's place among the hubs of its chunk, or
   * -1; `chunkHubs[c]` is how many hubs chunk `c` has.
   */
  readonly hubThreshold: number;
  readonly hubSlot: Int32Array;
  readonly chunkHubs: Int32Array;
  /**
   * The edges of task `p` that lead to hubs, `hubEdgeStart[p] .. hubEdgeStart[p + 1] - 1`: the
   * hub's chunk, and where its counter for this edge's kind sits in that chunk's counters
   * (`4 * slot + 2 * gate`; add 0 for "satisfying", 1 for "blocking").
   */
  readonly hubEdgeStart: Int32Array;
  readonly hubEdgeChunk: Int32Array;
  readonly hubEdgeAt: Int32Array;
  /** 1 for merge nodes (they complete where they become ready, without running). */
  readonly merge: Uint8Array;
  /** 1 for tasks with neither dependencies nor gates. */
  readonly root: Uint8Array;
  /** 1 for tasks with a timeout (their own `timeout_s` or the workflow's default). */
  readonly timed: Uint8Array;
  /** Positions of the tasks nobody depends on, in definition order. */
  readonly sinks: readonly number[];
  /** Task states are kept in chunks of `1 << chunkShift` tasks. */
  readonly chunkShift: number;
  condition(task: TaskDefinition): Result<CompiledCondition, Failed, object>;
  /** The real parents (merge nodes replaced by what they merge) of the task at `position`, by position. */
  realParents(position: number): readonly number[];
}

/** Chunks of 256 task states: a batch copies each chunk it touches once (2 KB), and its path. */
export const DEFAULT_CHUNK_SHIFT = 8;

/** Tasks with more parents (dependencies and gates) than this keep parent counters. */
export const DEFAULT_HUB_THRESHOLD = 8;

/** How runtimes of a definition lay out their tasks. */
export interface Layout {
  chunkShift: number;
  hubThreshold: number;
}

const DEFAULT_LAYOUT: Layout = { chunkShift: DEFAULT_CHUNK_SHIFT, hubThreshold: DEFAULT_HUB_THRESHOLD };

const cache = new WeakMap<WorkflowDefinition, GraphIndex>();

/** The index of a definition, built on first use. */
export function graphIndex(definition: WorkflowDefinition): GraphIndex {
  let index = cache.get(definition);
  if (!index) {
    index = buildIndex(definition, DEFAULT_LAYOUT);
    cache.set(definition, index);
  }
  return index;
}

/**
 * For tests: the runtimes of `definition` keep their task states in chunks of `1 << chunkShift`
 * tasks and parent counters for tasks with more than `hubThreshold` parents, so that small
 * workflows span several chunks and have hubs. Call before any runtime of the definition exists.
 */
export function useLayout(definition: WorkflowDefinition, layout: Partial<Layout>): void {
  const wanted = { ...DEFAULT_LAYOUT, ...layout };
  const known = cache.get(definition);
  if (known && (known.chunkShift !== wanted.chunkShift || known.hubThreshold !== wanted.hubThreshold))
    throw new Error('useLayout: the definition is already indexed with another layout');
  if (!known) cache.set(definition, buildIndex(definition, wanted));
}

function buildIndex(definition: WorkflowDefinition, { chunkShift, hubThreshold }: Layout): GraphIndex {
  const tasks = definition.tasks;
  const size = tasks.length;
  // A dictionary without prototype: looking a name up costs one probe of an open-addressed table,
  // cheaper than a Map's chained buckets once there are 100 000 names (cache misses).
  const positions = Object.create(null) as Record<string, number>;
  const position = {
    get: (name: string): number | undefined => positions[name],
    set: (name: string, at: number) => (positions[name] = at),
  };
  const merge = new Uint8Array(size);
  const root = new Uint8Array(size);
  const timed = new Uint8Array(size);
  tasks.forEach((task, i) => {
    position.set(task.name, i);
    if (isMergeNode(task.name, task.kwargs)) merge[i] = 1;
    if (task.dependsOn.length === 0 && (task.gates ?? []).length === 0) root[i] = 1;
    if (taskTimeoutS(definition, task) !== null) timed[i] = 1;
  });
  // Parents by position (one name lookup per edge, here only), then the same edges seen from the
  // parent: dependents in definition order, a dependent's dependsOn edge before its gate edge.
  const parents = (list: (task: TaskDefinition) => readonly string[]) => {
    const start = new Int32Array(size + 1);
    for (let i = 0; i < size; i++) start[i + 1] = start[i]! + list(tasks[i]!).length;
    const parent = new Int32Array(start[size]!);
    for (let i = 0; i < size; i++) {
      const names = list(tasks[i]!);
      for (let k = 0; k < names.length; k++) parent[start[i]! + k] = position.get(names[k]!) ?? -1;
    }
    return { start, parent };
  };
  const deps = parents((task) => task.dependsOn);
  const gates = parents((task) => task.gates ?? []);
  const forEachEdge = (visit: (parent: number, child: number, gate: number) => void): void => {
    for (let child = 0; child < size; child++) {
      for (let e = deps.start[child]!; e < deps.start[child + 1]!; e++) if (deps.parent[e]! >= 0) visit(deps.parent[e]!, child, 0);
      for (let e = gates.start[child]!; e < gates.start[child + 1]!; e++) if (gates.parent[e]! >= 0) visit(gates.parent[e]!, child, 1);
    }
  };
  const outStart = new Int32Array(size + 1);
  forEachEdge((parent) => outStart[parent + 1]!++);
  for (let p = 0; p < size; p++) outStart[p + 1]! += outStart[p]!;
  const outChild = new Int32Array(outStart[size]!);
  const outGate = new Uint8Array(outStart[size]!);
  const fill = outStart.slice(0, size);
  forEachEdge((parent, child, gate) => {
    const e = fill[parent]!++;
    outChild[e] = child;
    outGate[e] = gate;
  });
  const sinks: number[] = [];
  for (let p = 0; p < size; p++) if (outStart[p] === outStart[p + 1]) sinks.push(p);
  // Hubs.
  const hubSlot = new Int32Array(size).fill(-1);
  const chunkHubs = new Int32Array((size + (1 << chunkShift) - 1) >> chunkShift);
  tasks.forEach((task, i) => {
    if (task.dependsOn.length + (task.gates ?? []).length > hubThreshold) hubSlot[i] = chunkHubs[i >> chunkShift]!++;
  });
  const hubEdgeStart = new Int32Array(size + 1);
  for (let p = 0; p < size; p++) {
    let count = 0;
    for (let e = outStart[p]!; e < outStart[p + 1]!; e++) if (hubSlot[outChild[e]!]! >= 0) count++;
    hubEdgeStart[p + 1] = hubEdgeStart[p]! + count;
  }
  const hubEdgeChunk = new Int32Array(hubEdgeStart[size]!);
  const hubEdgeAt = new Int32Array(hubEdgeStart[size]!);
  for (let p = 0, h = 0; p < size; p++) {
    for (let e = outStart[p]!; e < outStart[p + 1]!; e++) {
      const child = outChild[e]!;
      const slot = hubSlot[child]!;
      if (slot < 0) continue;
      hubEdgeChunk[h] = child >> chunkShift;
      hubEdgeAt[h++] = 4 * slot + 2 * outGate[e]!;
    }
  }

  const conditions = new Map<string, ReturnType<GraphIndex['condition']>>();
  const realParents: Array<readonly number[] | undefined> = [];
  return {
    tasks,
    size,
    positionOf: (name) => positions[name],
    outStart,
    outChild,
    outGate,
    depStart: deps.start,
    depParent: deps.parent,
    gateStart: gates.start,
    gateParent: gates.parent,
    hubThreshold,
    hubSlot,
    chunkHubs,
    hubEdgeStart,
    hubEdgeChunk,
    hubEdgeAt,
    merge,
    root,
    timed,
    sinks,
    chunkShift,
    condition(task) {
      let compiled = conditions.get(task.name);
      if (!compiled) {
        const result = compileCondition(task.condition ?? '', task.dependsOn);
        compiled = result.ok
          ? { ok: true, value: result.value }
          : { ok: false, error: `condition does not compile: ${result.issues.map((i) => i.message).join('; ')}` };
        conditions.set(task.name, compiled);
      }
      return compiled;
    },
    realParents(at) {
      let parents = realParents[at];
      if (!parents) {
        // Only tasks below merge nodes need the walk; the others' parents are their dependencies,
        // whose positions are known already.
        const own: number[] = [];
        for (let e = deps.start[at]!; e < deps.start[at + 1]!; e++) own.push(deps.parent[e]!);
        const task = tasks[at];
        parents =
          task && own.some((p) => merge[p] === 1) ? realUpstreamTasks(definition, task.name).map((name) => position.get(name) ?? -1) : own;
        parents = parents.filter((p) => p >= 0);
        realParents[at] = parents;
      }
      return parents;
    },
  };
}
