import { describe, expect, it } from '@jest/globals';
import { sequentializeFanIn } from '../transform/fan-in';
import { taskState } from './access';
import { withTaskStates } from './assemble';
import { dependencyState, explainRuntime, type TaskExplanation } from './explain';
import { Harness, at, definition } from './test-helpers/build';

function task(tasks: TaskExplanation[], name: string): TaskExplanation {
  const found = tasks.find((t) => t.name === name);
  if (found === undefined) throw new Error(`no explanation of ${name}`);
  return found;
}

describe('explainRuntime (through the reducer)', () => {
  it('holds every ready task of a workflow not yet activated, and lists only unfinished tasks', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b', depends_on: ['a'] }]));
    const before = explainRuntime(h.runtime, at(1));
    expect(before.workflow).toMatchObject({ status: 'pending', activated: false, terminal: false, maxParallelism: null, deadline: null });
    expect(task(before.tasks, 'a')).toEqual({
      name: 'a',
      queue: 'default',
      attemptNo: 0,
      status: 'ready',
      heldBy: 'activation',
      readyAhead: 0,
    });
    expect(task(before.tasks, 'b')).toMatchObject({
      status: 'pending',
      cause: 'dependencies',
      dependencies: { policy: 'all', total: 1, satisfied: 0, blocking: [], unmet: ['a'], verdict: 'wait' },
    });

    h.activate();
    h.succeed('a');
    expect(explainRuntime(h.runtime, at(10)).tasks.map((t) => t.name)).toEqual(['b']);
  });

  it('says which parents a pending task waits on, and which of them already failed', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'x' }, { name: 'c', depends_on: ['a', 'x'], dep_policy: 'all_settled' }]));
    h.activate();
    h.fail('a');
    const c = task(explainRuntime(h.runtime, at(10)).tasks, 'c');
    expect(c).toMatchObject({
      status: 'pending',
      cause: 'dependencies',
      dependencies: { policy: 'all_settled', total: 2, satisfied: 0, blocking: ['a'], unmet: ['x'], verdict: 'wait' },
    });
  });

  it('names the gates of a split fan-in that hold a task', () => {
    const split = sequentializeFanIn(
      definition([{ name: 'p1' }, { name: 'p2' }, { name: 'p3' }, { name: 'sink', depends_on: ['p1', 'p2', 'p3'] }]),
      2,
    );
    if (!split.ok) throw new Error('split failed');
    const h = new Harness(split.value);
    h.activate();
    const gated = explainRuntime(h.runtime, at(5)).tasks.filter((t) => t.status === 'pending' && t.unmetGates.length > 0);
    expect(gated.length).toBeGreaterThan(0);
    for (const t of gated)
      if (t.status === 'pending') expect(t.unmetGates.every((g) => split.value.tasks.some((d) => d.name === g))).toBe(true);
  });

  it('sees a condition waiting for parent outputs read from blobs', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b', depends_on: ['a'], condition: 'inputs.a.ok' }]));
    h.activate();
    expect(task(explainRuntime(h.runtime, at(3)).tasks, 'b')).toMatchObject({
      status: 'pending',
      hasCondition: true,
      cause: 'dependencies',
    });
    h.succeed('a', 'blob:test-outputs/outputs/wf1/a/1.json');
    expect(task(explainRuntime(h.runtime, at(4)).tasks, 'b')).toMatchObject({
      status: 'pending',
      cause: 'inputs',
      dependencies: { satisfied: 1, verdict: 'ready' },
    });
  });

  it('holds ready tasks by max_parallelism, counting the ready tasks ahead, and running tasks by age', () => {
    const h = new Harness(definition([{ name: 'a', timeout_s: 600 }, { name: 'b' }, { name: 'c' }], { max_parallelism: 1 }));
    h.activate(); // at(1): a dispatched
    const report = explainRuntime(h.runtime, at(61));
    expect(report.workflow.maxParallelism).toEqual({ limit: 1, running: 1, waitingRetries: 0, holding: 1, ready: 2 });
    expect(task(report.tasks, 'a')).toMatchObject({
      status: 'running',
      attemptNo: 1,
      since: at(1),
      sinceIsDue: false,
      ageMs: 60_000,
      timeoutS: 600,
      waitingUntil: null,
      retryNo: 0,
    });
    expect(task(report.tasks, 'b')).toMatchObject({ status: 'ready', heldBy: 'max_parallelism', readyAhead: 0 });
    expect(task(report.tasks, 'c')).toMatchObject({ status: 'ready', heldBy: 'max_parallelism', readyAhead: 1 });
  });

  it('counts a retry waiting for its delay as holding no slot, and its age from its due time once due', () => {
    const h = new Harness(
      definition([{ name: 'a', num_retries: 1, retry_delay_s: 10 }, { name: 'b' }, { name: 'c' }], { max_parallelism: 2 }),
    );
    h.activate(); // at(1): a and b dispatched
    h.fail('a'); // at(2): a's retry due at(12)
    // c took the slot a's waiting retry does not hold.
    const waiting = explainRuntime(h.runtime, at(5));
    expect(waiting.workflow.maxParallelism).toEqual({ limit: 2, running: 3, waitingRetries: 1, holding: 2, ready: 0 });
    expect(task(waiting.tasks, 'a')).toMatchObject({
      status: 'running',
      attemptNo: 2,
      retryNo: 1,
      waitingUntil: at(12),
      dueInMs: 7_000,
      ageMs: null,
      lastError: 'exit code 1',
    });
    expect(task(waiting.tasks, 'c')).toMatchObject({ status: 'running', waitingUntil: null });
    const due = explainRuntime(h.runtime, at(20));
    expect(due.workflow.maxParallelism).toMatchObject({ waitingRetries: 0, holding: 3 });
    expect(task(due.tasks, 'a')).toMatchObject({ waitingUntil: null, since: at(12), sinceIsDue: true, ageMs: 8_000 });
  });

  it('says a cancel holds what has not run, and an engine cancel by its reason', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b', depends_on: ['a'] }], { timeout_s: 60 }));
    h.activate();
    expect(explainRuntime(h.runtime, at(2)).workflow.deadline).toEqual({ at: h.runtime.deadlineAt, timeoutS: 60 });
    h.send({ type: 'cancel', reason: 'deadline passed' });
    const report = explainRuntime(h.runtime, at(5));
    expect(report.workflow).toMatchObject({ cancelRequested: true, cancelReason: 'deadline passed', deadline: null });
    expect(report.tasks.map((t) => [t.name, t.status])).toEqual([['a', 'running']]);
  });

  it('leaves a ready task that nothing holds back unheld (stuck ready: the dispatch was lost)', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b' }], { max_parallelism: 1 }));
    h.activate(); // a dispatched, b held
    const a = taskState(h.runtime, 'a')!;
    // As if a's completion was applied but the step that dispatched b never happened.
    const lost = withTaskStates(h.runtime, [['a', { ...a, status: 'completed', completedAt: at(3) }]]);
    expect(task(explainRuntime(h.runtime, at(4)).tasks, 'b')).toMatchObject({ status: 'ready', heldBy: 'max_parallelism' });
    expect(task(explainRuntime(lost, at(4)).tasks, 'b')).toMatchObject({ status: 'ready', heldBy: null, readyAhead: 0 });
  });

  it('gives the dependency verdict of any task, finished or not (dependencyState)', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b' }, { name: 'c', depends_on: ['a', 'b'], dep_policy: 'any' }]));
    h.activate();
    h.fail('a');
    expect(dependencyState(h.runtime, 'c')).toEqual({
      policy: 'any',
      total: 2,
      satisfied: 0,
      blocking: ['a'],
      unmet: ['b'],
      verdict: 'wait',
    });
    h.succeed('b');
    h.succeed('c');
    expect(dependencyState(h.runtime, 'c')).toMatchObject({ satisfied: 1, verdict: 'ready' });
    expect(dependencyState(h.runtime, 'nope')).toBeUndefined();
  });

  it('reads no clock: the same runtime and time give the same explanation', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b', depends_on: ['a'] }]));
    h.activate();
    expect(explainRuntime(h.runtime, at(30))).toEqual(explainRuntime(h.runtime, at(30)));
  });
});
