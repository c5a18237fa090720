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
  readonly position: ReadonlyMap<string, number>;
  /**
   * Dependents by position, as a compressed adjacency list: the edges of task `p` are
   * `outStart[p] .. outStart[p + 1] - 1`; `outChild[e]` is the dependent's position and
   * `outGate[e]` is 1 when the edge is a gate (0: a `dependsOn` edge). A dependent is listed once
   * per edge, in definition order, its `dependsOn` edge before its gate edge.
   */
  readonly outStart: Int32Array;
  readonly outChild: Int32Array;
  readonly outGate: Uint8Array;
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
  condition(task: TaskDefinition): { ok: true; value: CompiledCondition } | { ok: false; error: string };
  /** The real parents (merge nodes replaced by what they merge) of the task at `position`, by position. */
  realParents(position: number): readonly number[];
}

/** Chunks of 256 task states: a batch copies each chunk it touches once (a few KB), and the root. */
export const DEFAULT_CHUNK_SHIFT = 8;

const cache = new WeakMap<WorkflowDefinition, GraphIndex>();

/** The index of a definition, built on first use. */
export function graphIndex(definition: WorkflowDefinition): GraphIndex {
  let index = cache.get(definition);
  if (!index) {
    index = buildIndex(definition, DEFAULT_CHUNK_SHIFT);
    cache.set(definition, index);
  }
  return index;
}

/**
 * For tests: the runtimes of `definition` keep their task states in chunks of `1 << shift` tasks,
 * so that small workflows span several chunks. Call before any runtime of the definition exists.
 */
export function useChunkShift(definition: WorkflowDefinition, shift: number): void {
  const known = cache.get(definition);
  if (known && known.chunkShift !== shift) throw new Error(`useChunkShift: the definition is already indexed with chunks of ${1 << known.chunkShift}`);
  if (!known) cache.set(definition, buildIndex(definition, shift));
}

function buildIndex(definition: WorkflowDefinition, chunkShift: number): GraphIndex {
  const tasks = definition.tasks;
  const size = tasks.length;
  const position = new Map<string, number>();
  const merge = new Uint8Array(size);
  const root = new Uint8Array(size);
  const timed = new Uint8Array(size);
  tasks.forEach((task, i) => {
    position.set(task.name, i);
    if (isMergeNode(task.name, task.kwargs)) merge[i] = 1;
    if (task.dependsOn.length === 0 && (task.gates ?? []).length === 0) root[i] = 1;
    if (taskTimeoutS(definition, task) !== null) timed[i] = 1;
  });
  // Count each parent's edges, then fill them in definition order of the dependents.
  const outStart = new Int32Array(size + 1);
  const forEachEdge = (visit: (parent: number, child: number, gate: number) => void): void => {
    tasks.forEach((task, child) => {
      for (const name of task.dependsOn) {
        const parent = position.get(name);
        if (parent !== undefined) visit(parent, child, 0);
      }
      for (const name of task.gates ?? []) {
        const parent = position.get(name);
        if (parent !== undefined) visit(parent, child, 1);
      }
    });
  };
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

  const conditions = new Map<string, ReturnType<GraphIndex['condition']>>();
  const realParents = new Map<number, readonly number[]>();
  return {
    tasks,
    size,
    position,
    outStart,
    outChild,
    outGate,
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
      let parents = realParents.get(at);
      if (!parents) {
        const task = tasks[at];
        // Only tasks below merge nodes need the walk; the others' parents are their dependencies.
        const names = task && task.dependsOn.some((d) => merge[position.get(d) ?? -1] === 1) ? realUpstreamTasks(definition, task.name) : (task?.dependsOn ?? []);
        parents = names.flatMap((name) => {
          const p = position.get(name);
          return p === undefined ? [] : [p];
        });
        realParents.set(at, parents);
      }
      return parents;
    },
  };
}
