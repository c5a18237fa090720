/**
 * The graph of a workflow page as the browser holds it: the server's nodes (patched in place by
 * live updates), their layout, and the filters. Pure (no DOM), so it is unit-tested and a test can
 * compute where a node is drawn.
 */
import type { ApiCounts, ApiDeltaEvent, ApiGraph, ApiGraphNode, ApiGroupNode, ApiTaskChange, ApiTaskNode } from '../../api-types';
import { layoutGraph, DEFAULT_LAYOUT, type Layout } from '../layout';
import type { DisplayState } from '../palette';

/** SVG draws up to this many visible nodes; above it the canvas does. */
export const SVG_NODE_LIMIT = 2_000;
/** The `tasks` level of a workflow with more tasks than this waits for a click. */
export const TASKS_CLICK_THRESHOLD = 10_000;

export interface GraphModel {
  graph: ApiGraph;
  /** Node index by node id. */
  index: Map<string, number>;
  /** Edges as node indexes, parent first. */
  edges: Array<[number, number]>;
  layout: Layout;
  /** Whether running tasks split into on-worker and in-queue (worker heartbeats are available). */
  hasWorkers: boolean;
}

export interface GraphFilter {
  /** Display states; empty = all. */
  status: readonly string[];
  queue: string;
  name: string;
}

/** Indexes the graph and lays it out. */
export function buildModel(graph: ApiGraph, hasWorkers: boolean): GraphModel {
  const index = new Map<string, number>();
  graph.nodes.forEach((n, i) => index.set(n.id, i));
  const edges: Array<[number, number]> = [];
  for (const e of graph.edges) {
    const from = index.get(e.from);
    const to = index.get(e.to);
    if (from !== undefined && to !== undefined) edges.push([from, to]);
  }
  return { graph, index, edges, layout: layoutGraph(graph.nodes.length, edges, DEFAULT_LAYOUT), hasWorkers };
}

/** How a task's status shows: running splits by where the task is. */
export function taskDisplayState(status: string, onWorker: boolean | null, hasWorkers: boolean): DisplayState {
  if (status !== 'running') return status as DisplayState;
  if (!hasWorkers || onWorker === null) return 'running';
  return onWorker ? 'on_worker' : 'in_queue';
}

/** A group's tasks by display state, in lifecycle order, zero counts left out. */
export function groupSegments(counts: ApiCounts, onWorker: number, hasWorkers: boolean): Array<{ state: DisplayState; count: number }> {
  const out: Array<{ state: DisplayState; count: number }> = [];
  const push = (state: DisplayState, count: number): void => {
    if (count > 0) out.push({ state, count });
  };
  push('pending', counts.pending);
  push('ready', counts.ready);
  if (hasWorkers) {
    const on = Math.min(onWorker, counts.running);
    push('in_queue', counts.running - on);
    push('on_worker', on);
  } else {
    push('running', counts.running);
  }
  push('completed', counts.completed);
  push('failed', counts.failed);
  push('upstream_failed', counts.upstream_failed);
  push('skipped', counts.skipped);
  push('cancelled', counts.cancelled);
  return out;
}

const BAR_ORDER: readonly DisplayState[] = [
  'completed',
  'skipped',
  'failed',
  'upstream_failed',
  'cancelled',
  'on_worker',
  'running',
  'in_queue',
  'ready',
  'pending',
];

/** The segments of a status bar: finished work first (from the left), pending last. */
export function barSegments(counts: ApiCounts, onWorker: number, hasWorkers: boolean): Array<{ state: DisplayState; count: number }> {
  return groupSegments(counts, onWorker, hasWorkers).sort((a, b) => BAR_ORDER.indexOf(a.state) - BAR_ORDER.indexOf(b.state));
}

/** The state a node is drawn in: a task's own; a group's most telling one (failure first, then activity). */
export function nodeDisplayState(node: ApiGraphNode, hasWorkers: boolean): DisplayState {
  if (node.kind === 'task') return taskDisplayState(node.status, node.on_worker, hasWorkers);
  const segments = groupSegments(node.counts, node.on_worker, hasWorkers);
  const priority: DisplayState[] = [
    'failed',
    'upstream_failed',
    'on_worker',
    'running',
    'in_queue',
    'ready',
    'cancelled',
    'pending',
    'completed',
    'skipped',
  ];
  for (const state of priority) if (segments.some((s) => s.state === state)) return state;
  return 'pending';
}

/** The display states a node has tasks in. */
function nodeStates(node: ApiGraphNode, hasWorkers: boolean): DisplayState[] {
  if (node.kind === 'task') return [nodeDisplayState(node, hasWorkers)];
  return groupSegments(node.counts, node.on_worker, hasWorkers).map((s) => s.state);
}

/** True when a node passes the filters: a group when any of its tasks does (by state) or is named so. */
export function nodeMatches(node: ApiGraphNode, filter: GraphFilter, hasWorkers: boolean): boolean {
  if (filter.queue && node.queue !== filter.queue && node.queue !== '*') return false;
  if (filter.status.length > 0 && !nodeStates(node, hasWorkers).some((s) => filter.status.includes(s))) return false;
  if (filter.name) {
    const needle = filter.name.toLowerCase();
    if (node.label.toLowerCase().includes(needle) || node.id.toLowerCase().includes(needle)) return true;
    return node.kind === 'group' && node.task_names.some((t) => t.toLowerCase().includes(needle));
  }
  return true;
}

/** A mask of the nodes that pass the filters, and how many do. */
export function visibleNodes(model: GraphModel, filter: GraphFilter): { visible: Uint8Array; count: number } {
  const visible = new Uint8Array(model.graph.nodes.length);
  let count = 0;
  model.graph.nodes.forEach((n, i) => {
    if (nodeMatches(n, filter, model.hasWorkers)) {
      visible[i] = 1;
      count++;
    }
  });
  return { visible, count };
}

/** The node that holds a task: its own node, or the group listing it; -1 when none. */
export function nodeOfTask(model: GraphModel, task: string): number {
  const own = model.index.get(task);
  if (own !== undefined && model.graph.nodes[own]!.kind === 'task') return own;
  return model.graph.nodes.findIndex((n) => n.kind === 'group' && n.task_names.includes(task));
}

/**
 * Applies a live update in place: task nodes take the changed tasks' status, group nodes their new
 * counts. Returns the indexes of the nodes that changed (to redraw only those).
 */
export function applyDelta(model: GraphModel, delta: Pick<ApiDeltaEvent, 'tasks' | 'groups'>): number[] {
  const changed: number[] = [];
  for (const t of delta.tasks) {
    const i = model.index.get(t.name);
    if (i === undefined) continue;
    const node = model.graph.nodes[i]!;
    if (node.kind !== 'task') continue;
    if (node.status !== t.status || node.on_worker !== t.on_worker) {
      const patched: ApiTaskNode = { ...node, status: t.status, on_worker: t.on_worker };
      model.graph.nodes[i] = patched;
      changed.push(i);
    }
  }
  for (const g of delta.groups) {
    const i = model.index.get(g.id);
    if (i === undefined) continue;
    const node = model.graph.nodes[i]!;
    if (node.kind !== 'group') continue;
    const patched: ApiGroupNode = { ...node, counts: g.counts, on_worker: g.on_worker };
    model.graph.nodes[i] = patched;
    changed.push(i);
  }
  return changed;
}

/** The latest known state of each task that is not pending, kept from the stream's snapshot and deltas. */
export function mergeTaskStates(
  states: Map<string, ApiTaskChange>,
  tasks: readonly ApiTaskChange[],
  snapshot: boolean,
): Map<string, ApiTaskChange> {
  const next = snapshot ? new Map<string, ApiTaskChange>() : new Map(states);
  for (const t of tasks) next.set(t.name, t);
  return next;
}
