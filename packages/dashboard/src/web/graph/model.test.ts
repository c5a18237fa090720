import { describe, expect, it } from '@jest/globals';
import type { ApiCounts, ApiGraph, ApiGroupNode, ApiTaskNode } from '../../api-types';
import {
  applyDelta,
  barSegments,
  buildModel,
  groupSegments,
  mergeTaskStates,
  nodeDisplayState,
  nodeMatches,
  nodeOfTask,
  taskDisplayState,
  visibleNodes,
} from './model';

const zero: ApiCounts = { pending: 0, ready: 0, running: 0, completed: 0, failed: 0, upstream_failed: 0, skipped: 0, cancelled: 0 };
const task = (id: string, status: ApiTaskNode['status'] = 'pending', queue = 'cpu', onWorker: boolean | null = null): ApiTaskNode => ({
  id,
  kind: 'task',
  label: id,
  queue,
  size: 1,
  status,
  on_worker: onWorker,
  depth: 0,
});
const group = (id: string, label: string, names: string[], counts: Partial<ApiCounts>, onWorker = 0, queue = 'gpu'): ApiGroupNode => ({
  id,
  kind: 'group',
  label,
  queue,
  size: names.length,
  counts: { ...zero, ...counts },
  on_worker: onWorker,
  task_names: names,
  depth: 1,
});

function graph(): ApiGraph {
  return {
    workflow_id: 'w',
    level: 'families',
    nodes: [
      task('prep', 'completed'),
      group('group:1', 'train ×3', ['train-000', 'train-001', 'train-002'], { running: 2, failed: 1 }, 1),
      task('eval'),
    ],
    edges: [
      { from: 'prep', to: 'group:1' },
      { from: 'group:1', to: 'eval' },
      { from: 'nope', to: 'eval' },
    ],
    total_tasks: 5,
    token: 't0',
  };
}

describe('graph model', () => {
  it('indexes nodes, drops edges to unknown nodes and lays out left to right', () => {
    const m = buildModel(graph(), true);
    expect(m.edges).toEqual([
      [0, 1],
      [1, 2],
    ]);
    expect(Array.from(m.layout.layer)).toEqual([0, 1, 2]);
  });

  it('splits running into on-worker and in-queue only with heartbeats', () => {
    expect(taskDisplayState('running', true, true)).toBe('on_worker');
    expect(taskDisplayState('running', false, true)).toBe('in_queue');
    expect(taskDisplayState('running', true, false)).toBe('running');
    expect(taskDisplayState('failed', null, true)).toBe('failed');
    const counts = { ...zero, running: 3, completed: 5 };
    expect(groupSegments(counts, 1, true)).toEqual([
      { state: 'in_queue', count: 2 },
      { state: 'on_worker', count: 1 },
      { state: 'completed', count: 5 },
    ]);
    expect(groupSegments(counts, 1, false)).toEqual([
      { state: 'running', count: 3 },
      { state: 'completed', count: 5 },
    ]);
  });

  it('fills status bars with finished work first', () => {
    expect(barSegments({ ...zero, pending: 1, running: 2, completed: 3, failed: 1 }, 1, true).map((s) => s.state)).toEqual([
      'completed',
      'failed',
      'on_worker',
      'in_queue',
      'pending',
    ]);
  });

  it('draws a group in its most telling state', () => {
    const m = buildModel(graph(), true);
    expect(nodeDisplayState(m.graph.nodes[1]!, true)).toBe('failed');
    expect(nodeDisplayState(group('g', 'g', ['a'], { completed: 4, skipped: 1 }), true)).toBe('completed');
    expect(nodeDisplayState(group('g', 'g', [], {}), true)).toBe('pending');
  });

  it('filters by state, queue and name (a group by any of its tasks)', () => {
    const m = buildModel(graph(), true);
    const f = (status: string[], queue: string, name: string) => Array.from(visibleNodes(m, { status, queue, name }).visible);
    expect(f([], '', '')).toEqual([1, 1, 1]);
    expect(f(['failed'], '', '')).toEqual([0, 1, 0]);
    expect(f(['in_queue', 'completed'], '', '')).toEqual([1, 1, 0]);
    expect(f([], 'cpu', '')).toEqual([1, 0, 1]);
    expect(f([], '', 'TRAIN-002')).toEqual([0, 1, 0]);
    expect(f([], '', 'ev')).toEqual([0, 0, 1]);
    expect(visibleNodes(m, { status: ['pending'], queue: 'cpu', name: '' }).count).toBe(1);
    expect(nodeMatches(group('g', 'depth 1 ×2', ['a'], {}, 0, '*'), { status: [], queue: 'gpu', name: '' }, true)).toBe(true);
  });

  it('finds the node of a task, own or group', () => {
    const m = buildModel(graph(), true);
    expect([nodeOfTask(m, 'eval'), nodeOfTask(m, 'train-001'), nodeOfTask(m, 'nope')]).toEqual([2, 1, -1]);
  });

  it('patches task nodes and group counts in place and says which changed', () => {
    const m = buildModel(graph(), true);
    const changed = applyDelta(m, {
      tasks: [
        { name: 'eval', status: 'running', attempt_no: 1, on_worker: false, error: null },
        { name: 'prep', status: 'completed', attempt_no: 1, on_worker: null, error: null },
        { name: 'train-000', status: 'completed', attempt_no: 1, on_worker: null, error: null },
      ],
      groups: [
        { id: 'group:1', counts: { ...zero, running: 1, failed: 1, completed: 1 }, on_worker: 1 },
        { id: 'group:9', counts: zero, on_worker: 0 },
      ],
    });
    expect(changed).toEqual([2, 1]);
    expect(nodeDisplayState(m.graph.nodes[2]!, true)).toBe('in_queue');
    expect((m.graph.nodes[1] as ApiGroupNode).counts.completed).toBe(1);
  });

  it('keeps the latest state of each task; a snapshot starts over', () => {
    const a = { name: 'a', status: 'running' as const, attempt_no: 1, on_worker: true, error: null };
    const s1 = mergeTaskStates(new Map(), [a], true);
    const s2 = mergeTaskStates(s1, [{ ...a, status: 'failed', error: 'boom' }], false);
    expect(s1.get('a')?.status).toBe('running');
    expect(s2.get('a')?.error).toBe('boom');
    expect(mergeTaskStates(s2, [], true).size).toBe(0);
  });
});
