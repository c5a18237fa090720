import { describe, expect, it } from '@jest/globals';
import { changedTasks, taskState, tasksIn } from './access';
import { assembleRuntime, withTaskStates } from './assemble';
import { encodeRuntime } from './codec';
import { SEGMENT_SHIFT, checkCore, chunkOf, coreOf } from './core';
import { createRuntime } from './create';
import { useLayout } from './graph-index';
import { foldEvents, reduce } from './reduce';
import { Harness, at, decodedRuntime, definition } from './test-helpers/build';
import type { CompletionEvent, TaskRuntime, WorkflowRuntime } from './types';

const diamond = definition([
  { name: 'a' },
  { name: 'b', depends_on: ['a'] },
  { name: 'c', depends_on: ['a'] },
  { name: 'd', depends_on: ['b', 'c'] },
]);

function wide(n: number, extra: Record<string, unknown> = {}) {
  const leaves = Array.from({ length: n }, (_, i) => ({ name: `leaf${i}`, depends_on: ['root'] }));
  return definition([{ name: 'root' }, ...leaves, { name: 'sink', depends_on: leaves.map((l) => l.name) }], extra);
}

function done(name: string, attemptNo = 1, now = at(50)): CompletionEvent {
  return { type: 'completion', now, taskName: name, attemptNo, success: true, outputRef: null, error: null };
}

/** Chunks (by index) whose object differs between two runtimes of one workflow. */
function differingChunks(a: WorkflowRuntime, b: WorkflowRuntime): number[] {
  const ca = coreOf(a);
  const cb = coreOf(b);
  const out: number[] = [];
  for (let c = 0; c < ca.chunks; c++) if (chunkOf(ca, c) !== chunkOf(cb, c)) out.push(c);
  return out;
}

describe('runtime.tasks: a read-only view for tests and old callers', () => {
  it('is built on first read, cached per runtime, frozen, and says what the accessors say', () => {
    const h = new Harness(diamond);
    h.activate();
    const view = h.runtime.tasks;
    expect(h.runtime.tasks).toBe(view);
    expect(Object.isFrozen(view)).toBe(true);
    expect(Object.entries(view)).toEqual([...tasksIn(h.runtime)]);
    expect(() => {
      (view as Record<string, TaskRuntime>).a = view.b!;
    }).toThrow(TypeError);
    expect(() => {
      (h.runtime as { tasks: unknown }).tasks = {};
    }).toThrow(TypeError);
  });

  it('keeps toEqual meaningful: equal states compare equal however they were built, different ones do not', () => {
    const h = new Harness(diamond);
    h.activate();
    h.succeed('a');
    const rt = h.runtime;
    const rebuilt = assembleRuntime(
      rt,
      [...tasksIn(rt)].map(([, state]) => ({ ...state })),
    );
    expect(rebuilt).toEqual(rt);
    expect(decodedRuntime(encodeRuntime(rt))).toEqual(rt);
    const { definition: _definition, tasks: _tasks, counts: _counts, ...fields } = rt;
    expect(
      withTaskStates(createRuntime(diamond, { workflowId: 'wf1', now: at(0), outputsContainer: 'test-outputs' }), tasksIn(rt), fields),
    ).toEqual(rt);
    const other = withTaskStates(rt, [['d', { ...taskState(rt, 'd')!, error: 'x' }]]);
    expect(other).not.toEqual(rt);
    // Nothing internal is enumerable: a spread copy or JSON shows the fields, the tasks and the counts.
    expect(Object.keys(rt)).toEqual([
      'workflowId',
      'definition',
      'outputsContainer',
      'status',
      'activated',
      'cancelRequested',
      'cancelAppliedAt',
      'retryAppliedAt',
      'createdAt',
      'updatedAt',
      'finishedAt',
      'corruptReason',
      'deadlineAt',
      'cancelReason',
      'rerunsApplied',
      'traceparent',
      'tasks',
      'counts',
    ]);
  });

  it('a spread copy (which leaves the internal structure behind) still works with the reducer and the accessors', () => {
    const h = new Harness(diamond);
    h.activate();
    const copy: WorkflowRuntime = { ...h.runtime };
    expect(taskState(copy, 'a')).toBe(taskState(h.runtime, 'a'));
    const fromCopy = reduce(copy, done('a', 1, at(9)));
    const fromOriginal = reduce(h.runtime, done('a', 1, at(9)));
    expect(fromCopy.effects).toEqual(fromOriginal.effects);
    expect(fromCopy.runtime).toEqual(fromOriginal.runtime);
    // A hand-made record with a changed task is read as it says.
    const edited = { ...h.runtime, tasks: { ...h.runtime.tasks, b: { ...h.runtime.tasks.b!, status: 'failed' as const } } };
    expect(taskState(edited, 'b')?.status).toBe('failed');
  });
});

describe('withTaskStates', () => {
  it('replaces task states and workflow fields, keeps counts and derived data in step, and leaves its input alone', () => {
    const h = new Harness(diamond);
    h.activate();
    const before = h.runtime;
    const a = taskState(before, 'a')!;
    const next = withTaskStates(before, [['a', { ...a, status: 'completed', completedAt: at(5) }]], {
      status: 'running',
      updatedAt: at(5),
    });
    expect(taskState(next, 'a')).toMatchObject({ status: 'completed', completedAt: at(5) });
    expect(next.updatedAt).toBe(at(5));
    expect(next.counts).toMatchObject({ running: 0, completed: 1, pending: 3 });
    expect(before.counts).toMatchObject({ running: 1, completed: 0, pending: 3 });
    expect(changedTasks(before, next)).toEqual(['a']);
    expect(checkCore(coreOf(next))).toEqual([]);
    // Nothing is re-evaluated: b and c stay pending (only a change of a parent re-evaluates a task).
    expect(taskState(next, 'b')?.status).toBe('pending');
    expect(reduce(next, { type: 'activate', now: at(6) }).effects.map((e) => (e.type === 'dispatch' ? e.taskName : e.type))).toEqual([]);
  });

  it('returns its input when there is nothing to replace, and refuses unknown tasks, unknown statuses and the definition', () => {
    const rt = createRuntime(diamond, { workflowId: 'wf1', now: at(0) });
    expect(withTaskStates(rt, [])).toBe(rt);
    expect(withTaskStates(rt, [], { status: 'pending' })).toBe(rt);
    expect(() => withTaskStates(rt, [['zz', taskState(rt, 'a')!]])).toThrow(/has no task "zz"/);
    expect(() => withTaskStates(rt, [['a', { ...taskState(rt, 'a')!, status: 'exploded' as never }]])).toThrow(
      /unknown task status "exploded"/,
    );
    expect(() => withTaskStates(rt, [], { definition: diamond } as never)).toThrow(/"definition" is not a workflow-level field/);
    expect(() => withTaskStates(rt, [], { counts: rt.counts } as never)).toThrow(/"counts" is not a workflow-level field/);
  });
});

describe('reduce and foldEvents report the changed positions', () => {
  it('lists each changed task once, in definition order, and nothing for an ignored event', () => {
    const rt = createRuntime(diamond, { workflowId: 'wf1', now: at(0) });
    const activated = reduce(rt, { type: 'activate', now: at(1) });
    expect(activated.changed).toEqual([0]);
    const folded = foldEvents(activated.runtime, [done('a', 1, at(2)), done('c', 1, at(3)), done('b', 1, at(4))]);
    expect(folded.changed).toEqual([0, 1, 2, 3]);
    expect(changedTasks(activated.runtime, folded.runtime)).toEqual(['a', 'b', 'c', 'd']);
    const ignored = reduce(folded.runtime, done('a', 1, at(5)));
    expect(ignored.runtime).toBe(folded.runtime);
    expect(ignored.changed).toEqual([]);
  });
});

describe('the persistent layout', () => {
  it('a completion copies only the chunks it touches and shares the rest with the runtime it came from', () => {
    const def = wide(5_000);
    const h = new Harness(def);
    h.activate();
    h.succeed('root');
    const before = h.runtime;
    h.succeed('leaf2500');
    // The leaf's chunk (its state) and the sink's chunk (its parent counters): nothing else.
    expect(differingChunks(before, h.runtime)).toEqual([2501 >> 8, 5001 >> 8]);
    expect(changedTasks(before, h.runtime)).toEqual(['leaf2500']);
    expect(checkCore(coreOf(h.runtime))).toEqual([]);
  });

  it('keeps parent counters only for tasks with more than 8 parents (the others read theirs)', () => {
    const def = definition([
      ...Array.from({ length: 9 }, (_, i) => ({ name: `p${i}` })),
      { name: 'few', depends_on: ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'] },
      { name: 'many', depends_on: ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8'], dep_policy: 8 },
    ]);
    const h = new Harness(def);
    expect(chunkOf(coreOf(h.runtime), 0).counters).toEqual([[0, 0, 0, 0]]);
    h.activate();
    for (let i = 0; i < 7; i++) h.succeed(`p${i}`);
    h.fail('p8');
    expect(chunkOf(coreOf(h.runtime), 0).counters).toEqual([[7, 1, 0, 0]]);
    expect(h.statuses()).toMatchObject({ few: 'pending', many: 'pending' });
    h.succeed('p7');
    expect(h.statuses()).toMatchObject({ few: 'running', many: 'running' });
    expect(checkCore(coreOf(h.runtime))).toEqual([]);
  });

  it('keeps the counters of many hubs of one chunk in groups, and behaves as with no hubs at all', () => {
    const raw = [
      ...Array.from({ length: 6 }, (_, i) => ({ name: `r${i}` })),
      ...Array.from({ length: 40 }, (_, i) => ({
        name: `h${i}`,
        depends_on: [`r${i % 6}`, `r${(i + 1) % 6}`, ...(i > 0 ? [`h${i - 1}`] : [])],
        dep_policy: i % 3 === 0 ? 'any' : 'all',
      })),
    ];
    const hubs = definition(raw);
    useLayout(hubs, { hubThreshold: 0 });
    const plainDef = definition(raw);
    useLayout(plainDef, { hubThreshold: 100 });
    const a = new Harness(hubs);
    const b = new Harness(plainDef);
    expect(chunkOf(coreOf(a.runtime), 0).counters.map((g) => g.length)).toEqual([64, 64, 32]);
    const both = (f: (h: Harness) => void) => {
      f(a);
      f(b);
      expect(checkCore(coreOf(a.runtime))).toEqual([]);
      expect({ ...a.runtime, definition: null }).toEqual({ ...b.runtime, definition: null });
    };
    both((h) => h.activate());
    both((h) => h.fail('r2'));
    both((h) => h.succeed('r0'));
    both((h) => h.succeed('r1'));
    for (let i = 0; i < 40; i++) if (a.status(`h${i}`) === 'running') both((h) => h.succeed(`h${i}`));
    both((h) => h.send({ type: 'retry' }));
    for (const name of ['r2', 'r3', 'r4', 'r5']) both((h) => h.succeed(name));
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < 40; i++) if (a.status(`h${i}`) === 'running') both((h) => h.succeed(`h${i}`));
    expect(a.runtime.status).toBe('completed');
  });

  it('works across many segments of tiny chunks', () => {
    const def = wide(300);
    useLayout(def, { chunkShift: 0 });
    const h = new Harness(def);
    expect(coreOf(h.runtime).segments.length).toBe(Math.ceil(302 / (1 << SEGMENT_SHIFT)));
    h.activate();
    h.succeed('root');
    expect(h.dispatched()).toHaveLength(300);
    for (let i = 299; i >= 0; i--) {
      const before = h.runtime;
      h.succeed(`leaf${i}`);
      expect(changedTasks(before, h.runtime)).toEqual(i === 0 ? [`leaf${i}`, 'sink'] : [`leaf${i}`]);
    }
    expect(h.dispatched()).toEqual(['sink']);
    expect(checkCore(coreOf(h.runtime))).toEqual([]);
    h.succeed('sink');
    expect(h.runtime.status).toBe('completed');
  });

  it('dispatches a max_parallelism backlog in definition order from where the last round stopped', () => {
    const def = wide(2_000, { max_parallelism: 3 });
    const h = new Harness(def);
    h.activate();
    h.succeed('root');
    expect(h.dispatched()).toEqual(['leaf0', 'leaf1', 'leaf2']);
    expect(coreOf(h.runtime).readyFrom).toBe(4);
    h.succeed('leaf1');
    expect(h.dispatched()).toEqual(['leaf3']);
    expect(coreOf(h.runtime).readyFrom).toBe(5);
    // A retry puts an earlier task back: the next round starts there.
    h.fail('leaf0', 'boom');
    expect(h.dispatched()).toEqual(['leaf4']);
    expect(taskState(h.runtime, 'leaf0')?.status).toBe('failed');
    h.send({ type: 'retry' });
    h.succeed('leaf2');
    expect(h.dispatched()).toEqual(['leaf0']);
    expect(checkCore(coreOf(h.runtime))).toEqual([]);
  });
});
