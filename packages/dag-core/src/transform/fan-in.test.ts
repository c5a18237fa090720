import { describe, expect, it } from '@jest/globals';
import { validateWorkflow } from '../definition/validate';
import type { WorkflowDefinition } from '../definition/types';
import { realUpstreamTasks, sequentializeFanIn } from './fan-in';

function definition(raw: unknown): WorkflowDefinition {
  const result = validateWorkflow(raw);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.value;
}

function fanIn(width: number, extra: Record<string, unknown> = {}) {
  const leaves = Array.from({ length: width }, (_, i) => ({ name: `leaf${i}`, kwargs: { cmd: 'x' }, depends_on: ['root'] }));
  return definition({
    name: 'w',
    tasks: [
      { name: 'root', kwargs: { cmd: 'x' } },
      ...leaves,
      { name: 'join', kwargs: { cmd: 'x' }, depends_on: leaves.map((l) => l.name), ...extra },
    ],
  });
}

function byName(def: WorkflowDefinition) {
  return new Map(def.tasks.map((t) => [t.name, t]));
}

describe('sequentializeFanIn', () => {
  it('splits a fan-in into ordered batches joined by a chain of merge nodes', () => {
    const result = sequentializeFanIn(fanIn(7), 3);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const tasks = byName(result.value);
    expect(tasks.get('__merge_join_0')).toMatchObject({
      dependsOn: ['leaf0', 'leaf1', 'leaf2'],
      kwargs: { __batch_merge: true, __target: 'join', __batch: 0 },
      depPolicy: 'all',
    });
    expect(tasks.get('__merge_join_1')?.dependsOn).toEqual(['leaf3', 'leaf4', 'leaf5', '__merge_join_0']);
    expect(tasks.get('__merge_join_2')?.dependsOn).toEqual(['leaf6', '__merge_join_1']);
    expect(tasks.get('__merge_join_3')).toBeUndefined();
    expect(tasks.get('join')?.dependsOn).toEqual(['__merge_join_2']);
  });

  it('gates each task of a later batch on the previous merge node, and leaves the first batch alone', () => {
    const result = sequentializeFanIn(fanIn(7), 3);
    if (!result.ok) throw new Error('expected success');
    const tasks = byName(result.value);
    expect(tasks.get('leaf0')?.gates).toBeUndefined();
    expect(tasks.get('leaf2')?.gates).toBeUndefined();
    expect(tasks.get('leaf3')?.gates).toEqual(['__merge_join_0']);
    expect(tasks.get('leaf5')?.gates).toEqual(['__merge_join_0']);
    expect(tasks.get('leaf6')?.gates).toEqual(['__merge_join_1']);
    // Gates are extra predecessors; a task's own dependencies are unchanged.
    expect(tasks.get('leaf6')?.dependsOn).toEqual(['root']);
  });

  it('keeps the user tasks in their order, with merge nodes placed before their target', () => {
    const result = sequentializeFanIn(fanIn(4), 2);
    if (!result.ok) throw new Error('expected success');
    expect(result.value.tasks.map((t) => t.name)).toEqual([
      'root',
      'leaf0',
      'leaf1',
      'leaf2',
      'leaf3',
      '__merge_join_0',
      '__merge_join_1',
      'join',
    ]);
  });

  it('returns the same object when no task has more dependencies than the cap', () => {
    const def = fanIn(5);
    const result = sequentializeFanIn(def, 5);
    expect(result.ok && result.value).toBe(def);
  });

  it('refuses a cap below 2 or not an integer', () => {
    for (const cap of [1, 0, -3, 2.5, Number.NaN]) {
      const result = sequentializeFanIn(fanIn(3), cap);
      expect(!result.ok && result.issues[0]?.code).toBe('bad-fan-in');
    }
  });

  it('refuses a target with a condition or a policy other than all, naming every one', () => {
    const def = definition({
      name: 'w',
      tasks: [
        { name: 'a', kwargs: { cmd: 'x' } },
        { name: 'b', kwargs: { cmd: 'x' } },
        { name: 'c', kwargs: { cmd: 'x' } },
        { name: 'any3', kwargs: { cmd: 'x' }, depends_on: ['a', 'b', 'c'], dep_policy: 'any' },
        { name: 'cond3', kwargs: { cmd: 'x' }, depends_on: ['a', 'b', 'c'], condition: 'inputs.a.ok' },
      ],
    });
    const result = sequentializeFanIn(def, 2);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((i) => [i.code, i.path])).toEqual([
      ['bad-fan-in', 'tasks[3].dep_policy'],
      ['condition-with-fan-in', 'tasks[4].condition'],
    ]);
  });

  it('detects the cycle a gate creates when a later batch feeds an earlier one', () => {
    // b (batch 1) waits for the merge of batch 0, which waits for a, which depends on b.
    const def = definition({
      name: 'w',
      tasks: [
        { name: 'b', kwargs: { cmd: 'x' } },
        { name: 'a', kwargs: { cmd: 'x' }, depends_on: ['b'] },
        { name: 'c', kwargs: { cmd: 'x' } },
        { name: 'join', kwargs: { cmd: 'x' }, depends_on: ['a', 'c', 'b'] },
      ],
    });
    const result = sequentializeFanIn(def, 2);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues[0]?.code).toBe('cycle');
    expect(result.issues[0]?.message).toContain('__merge_join_0');
  });

  it('handles a 3 000-task fan-in and two targets sharing the same parents', () => {
    const leaves = Array.from({ length: 3000 }, (_, i) => ({ name: `s${i}`, kwargs: { cmd: 'x' } }));
    const def = definition({
      name: 'w',
      tasks: [
        ...leaves,
        { name: 'j1', kwargs: { cmd: 'x' }, depends_on: leaves.map((l) => l.name) },
        { name: 'j2', kwargs: { cmd: 'x' }, depends_on: leaves.map((l) => l.name) },
      ],
    });
    const result = sequentializeFanIn(def, 100);
    if (!result.ok) throw new Error(JSON.stringify(result.issues.slice(0, 3)));
    const tasks = byName(result.value);
    expect(tasks.get('s150')?.gates).toEqual(['__merge_j1_0', '__merge_j2_0']);
    expect(Math.max(...result.value.tasks.map((t) => t.dependsOn.length))).toBe(101);
    expect(realUpstreamTasks(result.value, 'j2')).toEqual(leaves.map((l) => l.name));
  });
});

describe('realUpstreamTasks', () => {
  it('walks through merge nodes back to the original parents, in order', () => {
    const original = fanIn(7);
    const result = sequentializeFanIn(original, 3);
    if (!result.ok) throw new Error('expected success');
    expect(realUpstreamTasks(result.value, 'join')).toEqual(original.tasks.find((t) => t.name === 'join')?.dependsOn);
    expect(realUpstreamTasks(result.value, '__merge_join_1')).toEqual(['leaf0', 'leaf1', 'leaf2', 'leaf3', 'leaf4', 'leaf5']);
  });

  it('gives the plain dependencies of an untransformed task, ignores gates, and [] for an unknown task', () => {
    const result = sequentializeFanIn(fanIn(4), 2);
    if (!result.ok) throw new Error('expected success');
    expect(realUpstreamTasks(result.value, 'leaf3')).toEqual(['root']);
    expect(realUpstreamTasks(result.value, 'root')).toEqual([]);
    expect(realUpstreamTasks(result.value, 'nope')).toEqual([]);
  });

  it('leaves the definition as it was (it used to empty the dependencies of the task it started from)', () => {
    const result = sequentializeFanIn(fanIn(5), 2);
    if (!result.ok) throw new Error('expected success');
    const before = structuredClone(result.value);
    expect(realUpstreamTasks(result.value, 'join')).toEqual(['leaf0', 'leaf1', 'leaf2', 'leaf3', 'leaf4']);
    expect(realUpstreamTasks(result.value, 'leaf3')).toEqual(['root']);
    expect(result.value).toEqual(before);
    // A second walk gives the same answer.
    expect(realUpstreamTasks(result.value, 'join')).toEqual(['leaf0', 'leaf1', 'leaf2', 'leaf3', 'leaf4']);
  });

  it('follows a merge chain 50 000 long without overflowing the stack', () => {
    const result = sequentializeFanIn(fanIn(100_000), 2);
    if (!result.ok) throw new Error('expected success');
    const parents = realUpstreamTasks(result.value, 'join');
    expect(parents).toHaveLength(100_000);
    expect(parents[0]).toBe('leaf0');
    expect(parents[99_999]).toBe('leaf99999');
  });
});
