import { describe, expect, it } from '@jest/globals';
import type { TaskDefinition, WorkflowDefinition } from '../definition/types';
import { definition } from '../runtime/test-helpers/build';
import { autoRollupLevel, layerOf, rollupGraph, rollupSizes, type RollupGraph } from './rollup';

/** A definition built directly (validation of 100k tasks is not what these tests are about). */
function fast(tasks: Array<{ name: string; dependsOn?: string[]; queue?: string }>): WorkflowDefinition {
  return {
    name: 'shape',
    defaultQueue: 'default',
    defaultTaskTimeoutS: null,
    maxParallelism: null,
    resultPolicy: 'all_sinks_succeed',
    defaultRetryDelayS: 0,
    defaultRetryBackoff: 1,
    defaultRetryMaxDelayS: null,
    timeoutS: null,
    tasks: tasks.map((t): TaskDefinition => ({
      name: t.name,
      kwargs: {},
      dependsOn: t.dependsOn ?? [],
      queue: t.queue ?? null,
      depPolicy: 'all',
      condition: null,
      numRetries: 0,
      timeoutS: null,
      retryDelayS: null,
      retryBackoff: null,
      retryMaxDelayS: null,
    })),
  };
}

/** The golden form of a graph: labels, and edges by label. */
function golden(graph: RollupGraph): { nodes: string[]; edges: string[] } {
  return {
    nodes: graph.nodes.map((n) => `${n.id} ${n.kind} "${n.label}" ${n.queue} size=${n.tasks.length} depth=${n.depth}`),
    edges: graph.edges.map(([a, b]) => `${graph.nodes[a]!.label} -> ${graph.nodes[b]!.label}`),
  };
}

const pad = (i: number): string => String(i).padStart(3, '0');

/** Seed shape: root → 998 leaves → terminal. */
function seedShape(): WorkflowDefinition {
  const leaves = Array.from({ length: 998 }, (_, i) => `leaves/leaf-${String(i).padStart(4, '0')}`);
  return fast([{ name: 'root' }, ...leaves.map((name) => ({ name, dependsOn: ['root'] })), { name: 'terminal', dependsOn: leaves }]);
}

/** setup → 1 000 × (prep-i → train-i on gpu → eval-i) → report. */
function chains(): WorkflowDefinition {
  const tasks: Array<{ name: string; dependsOn?: string[]; queue?: string }> = [{ name: 'setup' }];
  for (let i = 0; i < 1000; i++) {
    tasks.push({ name: `prep-${pad(i)}`, dependsOn: ['setup'] });
    tasks.push({ name: `train-${pad(i)}`, dependsOn: [`prep-${pad(i)}`], queue: 'gpu' });
    tasks.push({ name: `eval-${pad(i)}`, dependsOn: [`train-${pad(i)}`] });
  }
  tasks.push({ name: 'report', dependsOn: Array.from({ length: 1000 }, (_, i) => `eval-${pad(i)}`) });
  return fast(tasks);
}

/** A linear congruential generator: the same numbers on every run. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** `n` tasks with random names in layers of 100, each with 1–3 random parents in the layer before. */
function randomLayered(n: number, width = 100): WorkflowDefinition {
  const random = lcg(42);
  const tasks: Array<{ name: string; dependsOn?: string[] }> = [];
  for (let i = 0; i < n; i++) {
    const layer = Math.floor(i / width);
    const name = `t${Math.floor(random() * 1e9).toString(36)}x${i}`;
    if (layer === 0) {
      tasks.push({ name });
      continue;
    }
    const parents = new Set<string>();
    const k = 1 + Math.floor(random() * 3);
    for (let j = 0; j < k; j++) parents.add(tasks[(layer - 1) * width + Math.floor(random() * width)]!.name);
    tasks.push({ name, dependsOn: [...parents] });
  }
  return fast(tasks);
}

describe('layerOf', () => {
  it('strips a trailing -NNN (3+ digits, optional _N) only', () => {
    expect(layerOf('train-001')).toBe('train');
    expect(layerOf('train-0001_2')).toBe('train');
    expect(layerOf('shard-12')).toBe('shard-12');
    expect(layerOf('-123')).toBe('-123');
  });
});

describe('rollupGraph goldens', () => {
  it('diamond: 4 nodes at every level but layers (3)', () => {
    const def = definition([
      { name: 'a' },
      { name: 'b', depends_on: ['a'] },
      { name: 'c', depends_on: ['a'] },
      { name: 'd', depends_on: ['b', 'c'] },
    ]);
    expect(golden(rollupGraph(def, 'families'))).toEqual({
      nodes: [
        'a task "a" default size=1 depth=0',
        'b task "b" default size=1 depth=1',
        'c task "c" default size=1 depth=1',
        'd task "d" default size=1 depth=2',
      ],
      edges: ['a -> b', 'a -> c', 'b -> d', 'c -> d'],
    });
    expect(golden(rollupGraph(def, 'siblings'))).toEqual({
      nodes: ['a task "a" default size=1 depth=0', '#0 group "b +1" default size=2 depth=1', 'd task "d" default size=1 depth=2'],
      edges: ['a -> b +1', 'b +1 -> d'],
    });
    expect(golden(rollupGraph(def, 'layers')).nodes).toEqual([
      'a task "a" default size=1 depth=0',
      '#0 group "depth 1 ×2" default size=2 depth=1',
      'd task "d" default size=1 depth=2',
    ]);
    expect(rollupGraph(def, 'tasks').nodes).toHaveLength(4);
    expect(autoRollupLevel(def)).toBe('tasks');
  });

  it('seed shape (root → 998 leaves → terminal): 3 nodes', () => {
    const def = seedShape();
    expect(golden(rollupGraph(def, 'families'))).toEqual({
      nodes: [
        'root task "root" default size=1 depth=0',
        '#0 group "leaves/leaf ×998" default size=998 depth=1',
        'terminal task "terminal" default size=1 depth=2',
      ],
      edges: ['root -> leaves/leaf ×998', 'leaves/leaf ×998 -> terminal'],
    });
    expect(autoRollupLevel(def)).toBe('families');
  });

  it('1 000 prep → train → eval chains between setup and report: 5 nodes', () => {
    const def = chains();
    expect(golden(rollupGraph(def, 'families'))).toEqual({
      nodes: [
        'setup task "setup" default size=1 depth=0',
        '#0 group "prep ×1000" default size=1000 depth=1',
        '#1 group "train ×1000" gpu size=1000 depth=2',
        '#2 group "eval ×1000" default size=1000 depth=3',
        'report task "report" default size=1 depth=4',
      ],
      edges: ['setup -> prep ×1000', 'prep ×1000 -> train ×1000', 'train ×1000 -> eval ×1000', 'eval ×1000 -> report'],
    });
    expect(autoRollupLevel(def)).toBe('families');
  });

  it('families keeps stems apart that siblings merges, and never merges across queues', () => {
    const def = fast([
      { name: 'root' },
      { name: 'x-001', dependsOn: ['root'] },
      { name: 'x-002', dependsOn: ['root'] },
      { name: 'y', dependsOn: ['root'] },
      { name: 'z', dependsOn: ['root'], queue: 'gpu' },
    ]);
    expect(golden(rollupGraph(def, 'families')).nodes.slice(1)).toEqual([
      '#0 group "x ×2" default size=2 depth=1',
      'y task "y" default size=1 depth=1',
      'z task "z" gpu size=1 depth=1',
    ]);
    expect(golden(rollupGraph(def, 'siblings')).nodes.slice(1)).toEqual([
      '#0 group "x-001 +2" default size=3 depth=1',
      'z task "z" gpu size=1 depth=1',
    ]);
  });

  it('random layered 10 000 tasks: auto picks layers (100 nodes, edges only between neighbouring depths)', () => {
    const def = randomLayered(10_000);
    const sizes = rollupSizes(def);
    expect(sizes.families).toBeGreaterThan(2000);
    expect(sizes.siblings).toBeGreaterThan(2000);
    expect(sizes.layers).toBe(100);
    expect(autoRollupLevel(def, sizes)).toBe('layers');
    const graph = rollupGraph(def, 'layers');
    expect(graph.nodes.map((n) => n.depth)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(graph.edges).toEqual(Array.from({ length: 99 }, (_, i) => [i, i + 1]));
    expect(graph.nodes[1]!.label).toBe('depth 1 ×100');
  });

  it('is deterministic, topological, and covers every task once', () => {
    const def = randomLayered(600, 30);
    for (const level of ['families', 'siblings', 'layers', 'tasks'] as const) {
      const a = rollupGraph(def, level);
      expect(rollupGraph(def, level)).toEqual(a);
      for (const [from, to] of a.edges) expect(from).toBeLessThan(to);
      const covered = a.nodes.flatMap((n) => n.tasks).sort((x, y) => x - y);
      expect(covered).toEqual(Array.from({ length: 600 }, (_, i) => i));
      expect(a.nodes.every((node, i) => node.tasks.every((t) => a.nodeOfTask[t] === i))).toBe(true);
    }
  });

  it('a chain of 3 000 tasks has no level under 2 000 nodes: auto takes the smallest', () => {
    const def = fast(Array.from({ length: 3000 }, (_, i) => ({ name: `s${i}`, dependsOn: i === 0 ? [] : [`s${i - 1}`] })));
    expect(autoRollupLevel(def)).toBe('families');
    expect(rollupGraph(def, 'layers').nodes).toHaveLength(3000);
  });

  it('rolls 100 000 tasks up without deep recursion', () => {
    const def = fast(
      Array.from({ length: 100_000 }, (_, i) => ({ name: `w-${String(i).padStart(6, '0')}`, dependsOn: i === 0 ? [] : ['w-000000'] })),
    );
    const graph = rollupGraph(def, 'families');
    expect(graph.nodes.map((n) => n.label)).toEqual(['w-000000', 'w ×99999']);
  });
});
