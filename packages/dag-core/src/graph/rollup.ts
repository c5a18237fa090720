import { taskQueue, type WorkflowDefinition } from '../definition/types';

/**
 * Rolling a workflow's DAG up into fewer nodes, for pictures of big workflows (the dashboard's
 * graph: packages/dashboard/README.md#graph-levels). Pure and deterministic: the same definition
 * and level give the same nodes, ids and edges.
 *
 * Tasks are taken in topological order and grouped:
 * - `families`: by (the groups of their parents, their queue, their name stem ({@link layerOf})):
 *   `train-000` … `train-997` → `train ×998`, and their children (grouped the same way) follow;
 * - `siblings`: by (their parent tasks themselves, their queue), whatever their names;
 * - `layers`: one node per depth (longest path from a root);
 * - `tasks`: one node per task.
 */
export type RollupLevel = 'families' | 'siblings' | 'layers' | 'tasks';

/** The levels, finest grouping first after `tasks` (the order `auto` tries them in). */
export const ROLLUP_LEVELS: readonly RollupLevel[] = ['families', 'siblings', 'layers', 'tasks'];

/** `auto` shows every task up to this many tasks. */
export const ROLLUP_AUTO_TASKS_MAX = 200;
/** `auto` otherwise picks the first level with at most this many nodes. */
export const ROLLUP_AUTO_NODES_MAX = 2000;

/** One node of a rolled-up graph. */
export interface RollupNode {
  /** The task name for a single task; `#N` for a group (task names never hold `#`). */
  id: string;
  kind: 'task' | 'group';
  /** The task name; `train ×998`; `depth 3 ×120`; `first-task +N`. */
  label: string;
  /** The queue of its tasks; `*` when they differ (only a `layers` node can mix them). */
  queue: string;
  /** Positions of its tasks in `definition.tasks`, ascending. */
  tasks: number[];
  /** The depth of its shallowest task (0: a root). */
  depth: number;
}

/** A rolled-up graph. */
export interface RollupGraph {
  level: RollupLevel;
  /** In topological order: every edge goes from an earlier node to a later one. */
  nodes: RollupNode[];
  /** `[from, to]` as indices into {@link nodes}, each pair once, sorted. */
  edges: Array<[number, number]>;
  /** For each task (by position in `definition.tasks`), the index of its node. */
  nodeOfTask: number[];
  /** For each task, its depth (longest path from a root; 0 for roots). */
  depthOfTask: number[];
}

/** A task name without a trailing `-NNN` (three or more digits, an optional `_N`): the name stem. */
export function layerOf(taskName: string): string {
  const layer = taskName.replace(/-\d{3,}(?:_\d+)?$/, '');
  return layer === '' ? taskName : layer;
}

/** The parents of each task (depends_on and gates) as positions; names the definition lacks are left out. */
function parentsOf(definition: WorkflowDefinition): number[][] {
  const position = new Map<string, number>();
  definition.tasks.forEach((task, i) => position.set(task.name, i));
  return definition.tasks.map((task) => {
    const out: number[] = [];
    const seen = new Set<number>();
    for (const name of task.gates ? [...task.dependsOn, ...task.gates] : task.dependsOn) {
      const p = position.get(name);
      if (p !== undefined && !seen.has(p)) {
        seen.add(p);
        out.push(p);
      }
    }
    return out;
  });
}

/**
 * Topological order (Kahn's, ties by definition order) and each task's depth. Tasks on a cycle
 * (a definition that was not validated) come last, in definition order, at depth 0.
 */
function topoOrder(parents: readonly number[][]): { order: number[]; depth: number[] } {
  const n = parents.length;
  const children: number[][] = Array.from({ length: n }, () => []);
  const waiting = new Array<number>(n).fill(0);
  parents.forEach((ps, i) => {
    waiting[i] = ps.length;
    for (const p of ps) children[p]!.push(i);
  });
  const depth = new Array<number>(n).fill(0);
  const order: number[] = [];
  // A min-heap would keep ties in definition order at every step; a FIFO seeded in definition
  // order is enough for a stable, deterministic order and is O(n + e).
  for (let i = 0; i < n; i++) if (waiting[i] === 0) order.push(i);
  for (let head = 0; head < order.length; head++) {
    const t = order[head]!;
    for (const c of children[t]!) {
      if (depth[t]! + 1 > depth[c]!) depth[c] = depth[t]! + 1;
      waiting[c]!--;
      if (waiting[c] === 0) order.push(c);
    }
  }
  if (order.length < n) {
    const placed = new Uint8Array(n);
    for (const t of order) placed[t] = 1;
    for (let i = 0; i < n; i++) if (!placed[i]) order.push(i);
  }
  return { order, depth };
}

/** The label of a group of several tasks. */
function groupLabel(level: RollupLevel, names: readonly string[], depth: number): string {
  if (level === 'layers') return `depth ${depth} ×${names.length}`;
  const stem = layerOf(names[0]!);
  if (names.every((name) => layerOf(name) === stem)) return `${stem} ×${names.length}`;
  return `${names[0]!} +${names.length - 1}`;
}

/** Rolls `definition` up at `level` (see {@link RollupLevel}). */
export function rollupGraph(definition: WorkflowDefinition, level: RollupLevel): RollupGraph {
  const tasks = definition.tasks;
  const parents = parentsOf(definition);
  const { order, depth } = topoOrder(parents);
  const groupOfTask = new Array<number>(tasks.length).fill(-1);
  const members: number[][] = [];
  const keys = new Map<string, number>();

  for (const t of order) {
    let key: string;
    if (level === 'tasks') key = String(t);
    else if (level === 'layers') key = String(depth[t]);
    else if (level === 'siblings') key = `${[...parents[t]!].sort((a, b) => a - b).join(',')}|${taskQueue(definition, tasks[t]!)}`;
    else {
      const groups = [...new Set(parents[t]!.map((p) => groupOfTask[p]!))].sort((a, b) => a - b);
      key = `${groups.join(',')}|${taskQueue(definition, tasks[t]!)}|${layerOf(tasks[t]!.name)}`;
    }
    let g = keys.get(key);
    if (g === undefined) {
      g = members.length;
      keys.set(key, g);
      members.push([]);
    }
    members[g]!.push(t);
    groupOfTask[t] = g;
  }

  // Layers were made in order of first appearance: put them in depth order.
  let rank = members.map((_, g) => g);
  if (level === 'layers') {
    const byDepth = members.map((_, g) => g).sort((a, b) => depth[members[a]![0]!]! - depth[members[b]![0]!]!);
    rank = new Array<number>(members.length);
    byDepth.forEach((g, i) => (rank[g] = i));
  }
  const ordered: number[][] = new Array<number[]>(members.length);
  members.forEach((m, g) => (ordered[rank[g]!] = m.sort((a, b) => a - b)));
  const nodeOfTask = groupOfTask.map((g) => rank[g]!);

  let groupNo = 0;
  const nodes: RollupNode[] = ordered.map((m) => {
    const queues = new Set(m.map((t) => taskQueue(definition, tasks[t]!)));
    const queue = queues.size === 1 ? [...queues][0]! : '*';
    let d = Number.POSITIVE_INFINITY;
    for (const t of m) if (depth[t]! < d) d = depth[t]!;
    if (m.length === 1) return { id: tasks[m[0]!]!.name, kind: 'task', label: tasks[m[0]!]!.name, queue, tasks: m, depth: d };
    const names = m.map((t) => tasks[t]!.name);
    return { id: `#${groupNo++}`, kind: 'group', label: groupLabel(level, names, d), queue, tasks: m, depth: d };
  });

  const n = nodes.length;
  const seen = new Set<number>();
  const edges: Array<[number, number]> = [];
  parents.forEach((ps, t) => {
    const to = nodeOfTask[t]!;
    for (const p of ps) {
      const from = nodeOfTask[p]!;
      if (from === to) continue;
      const code = from * n + to;
      if (seen.has(code)) continue;
      seen.add(code);
      edges.push([from, to]);
    }
  });
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return { level, nodes, edges, nodeOfTask, depthOfTask: depth };
}

/** The number of nodes of each level. */
export function rollupSizes(definition: WorkflowDefinition): Record<RollupLevel, number> {
  const sizes = { tasks: definition.tasks.length } as Record<RollupLevel, number>;
  for (const level of ROLLUP_LEVELS) if (level !== 'tasks') sizes[level] = rollupGraph(definition, level).nodes.length;
  return sizes;
}

/**
 * The level `auto` stands for: `tasks` up to {@link ROLLUP_AUTO_TASKS_MAX} tasks, else the first of
 * `families`, `siblings`, `layers` with at most {@link ROLLUP_AUTO_NODES_MAX} nodes, else the one
 * with the fewest nodes (the first of them on a tie).
 */
export function autoRollupLevel(definition: WorkflowDefinition, sizes: Record<RollupLevel, number> = rollupSizes(definition)): RollupLevel {
  if (definition.tasks.length <= ROLLUP_AUTO_TASKS_MAX) return 'tasks';
  let best: RollupLevel | null = null;
  for (const level of ['families', 'siblings', 'layers'] as const) {
    if (sizes[level] <= ROLLUP_AUTO_NODES_MAX) return level;
    if (best === null || sizes[level] < sizes[best]) best = level;
  }
  return best ?? 'layers';
}
