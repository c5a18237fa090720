// Re-running a task (docs/failure-model.md, "Re-running a task"): the `rerun` event of the reducer,
// `planRerun`, the stored `reruns_applied`, and properties over random DAGs run to the end.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { changedTasks, taskState, tasksIn } from './access';
import { encodeRuntime } from './codec';
import { planRerun } from './rerun';
import { applyDeltaRecord, assembleParts, decodeLogRecords, decodeSnapshot, encodeDeltaRecord, encodeSnapshot } from './snapshot-codec';
import { Harness, decodedRuntime, definition } from './test-helpers/build';
import { RERUN_FORGET_AFTER_MS, type Effect, type RerunEvent, type WorkflowRuntime } from './types';
import { reduce } from './reduce';

/** a → b → d, a → c → d; d runs when b says ok. */
function diamond(): Harness {
  const h = new Harness(
    definition([
      { name: 'a' },
      { name: 'b', depends_on: ['a'], num_retries: 1 },
      { name: 'c', depends_on: ['a'] },
      { name: 'd', depends_on: ['b', 'c'], condition: 'inputs.b.ok' },
      { name: 'e' },
    ]),
  );
  h.activate();
  h.succeed('a', '{"n":1}');
  h.succeed('e');
  h.succeed('b', '{"ok":true}');
  h.succeed('c');
  h.succeed('d', '"done"');
  expect(h.runtime.status).toBe('completed');
  return h;
}

function rerunEvent(
  taskName: string,
  downstream: boolean,
  requestId = `r-${taskName}`,
  extra: Partial<RerunEvent> = {},
): Omit<RerunEvent, 'now'> {
  return { type: 'rerun', requestId, taskName, downstream, ...extra };
}

function notices(effects: readonly Effect[]): string[] {
  return effects.flatMap((e) => (e.type === 'notice' ? [e.message] : []));
}

describe('rerun event', () => {
  it('re-runs one completed task with its next attempt; its dependents keep their state; the finished workflow runs again, then finishes again', () => {
    const h = diamond();
    const before = h.runtime;
    const result = h.send(rerunEvent('b', false));
    expect(result.effects).toEqual([expect.objectContaining({ type: 'dispatch', taskName: 'b', attemptNo: 2 })]);
    expect(h.runtime.status).toBe('running');
    expect(h.runtime.finishedAt).toBeNull();
    expect(changedTasks(before, h.runtime)).toEqual(['b']);
    expect(taskState(h.runtime, 'b')).toMatchObject({
      status: 'running',
      attemptNo: 2,
      retryBase: 1,
      outputRef: null,
      error: null,
      completedAt: null,
    });
    expect(taskState(h.runtime, 'd')).toBe(taskState(before, 'd'));
    expect(h.runtime.rerunsApplied).toEqual([{ id: 'r-b', at: h.runtime.updatedAt }]);
    const done = h.succeed('b', '{"ok":false}');
    expect(done.effects).toEqual([{ type: 'workflow-finished', status: 'completed' }]);
    expect(taskState(h.runtime, 'b')).toMatchObject({ status: 'completed', attemptNo: 2, outputRef: '{"ok":false}' });
    // d was not re-run: its condition is not evaluated again.
    expect(taskState(h.runtime, 'd')).toMatchObject({ status: 'completed', attemptNo: 1 });
  });

  it('with downstream, its transitive dependents go back to pending and evaluate their conditions afresh with the new output', () => {
    const h = diamond();
    const before = h.runtime;
    h.send(rerunEvent('b', true));
    expect(changedTasks(before, h.runtime)).toEqual(['b', 'd']);
    expect(h.statuses()).toEqual({ a: 'completed', b: 'running', c: 'completed', d: 'pending', e: 'completed' });
    expect(taskState(h.runtime, 'd')).toMatchObject({ attemptNo: 1, retryBase: 1, outputRef: null, completedAt: null });
    h.succeed('b', '{"ok":false}');
    expect(taskState(h.runtime, 'd')).toMatchObject({ status: 'skipped', attemptNo: 1, error: 'condition false: inputs.b.ok = false' });
    expect(h.runtime.status).toBe('completed');
    // Again, now with b ok: d runs with attempt 2.
    h.send(rerunEvent('b', true, 'r-again'));
    h.succeed('b', '{"ok":true}');
    expect(h.dispatched()).toEqual(['d']);
    expect(h.attempt('d')).toBe(2);
    h.succeed('d');
    expect(h.runtime.status).toBe('completed');
    expect(h.runtime.rerunsApplied?.map((r) => r.id)).toEqual(['r-b', 'r-again']);
  });

  it('re-running a root with downstream re-runs everything below it, each with its next attempt', () => {
    const h = diamond();
    h.send(rerunEvent('a', true));
    expect(h.statuses()).toEqual({ a: 'running', b: 'pending', c: 'pending', d: 'pending', e: 'completed' });
    h.succeed('a');
    expect(h.dispatched()).toEqual(['b', 'c']);
    h.succeed('b', '{"ok":true}');
    h.succeed('c');
    h.succeed('d');
    expect(Object.fromEntries([...tasksIn(h.runtime)].map(([n, t]) => [n, t.attemptNo]))).toEqual({ a: 2, b: 2, c: 2, d: 2, e: 1 });
    expect(h.runtime.status).toBe('completed');
  });

  it('gives a failed task a fresh retry budget; attempt numbers keep counting', () => {
    const h = new Harness(
      definition([
        { name: 'x', num_retries: 1 },
        { name: 'y', depends_on: ['x'] },
      ]),
    );
    h.activate();
    h.fail('x');
    h.fail('x');
    expect(h.statuses()).toEqual({ x: 'failed', y: 'upstream_failed' });
    expect(h.runtime.status).toBe('failed');
    h.send(rerunEvent('x', false));
    // Without downstream, y stays upstream_failed; x gets attempts 3 and 4.
    expect(h.statuses()).toEqual({ x: 'running', y: 'upstream_failed' });
    h.fail('x');
    expect(h.attempt('x')).toBe(4);
    h.fail('x');
    expect(h.statuses()).toEqual({ x: 'failed', y: 'upstream_failed' });
    expect(h.runtime.status).toBe('failed');
    // With downstream, y goes back to pending and runs once x completes.
    h.send(rerunEvent('x', true, 'r2'));
    expect(h.statuses()).toEqual({ x: 'running', y: 'pending' });
    h.succeed('x');
    h.succeed('y');
    expect(h.runtime.status).toBe('completed');
    expect(h.attempt('x')).toBe(5);
  });

  it('an upstream_failed task re-run alone settles back to upstream_failed while its parent still failed; the workflow stays failed', () => {
    const h = new Harness(definition([{ name: 'x' }, { name: 'y', depends_on: ['x'] }]));
    h.activate();
    h.fail('x');
    const result = h.send(rerunEvent('y', false));
    expect(h.statuses()).toEqual({ x: 'failed', y: 'upstream_failed' });
    // The workflow never left `failed`: nothing to report.
    expect(result.effects).toEqual([]);
    expect(h.runtime.status).toBe('failed');
  });

  it('applies each request once: the same id again is ignored, whatever it asks', () => {
    const h = diamond();
    h.send(rerunEvent('b', false, 'same'));
    h.succeed('b', '{"ok":true}');
    const before = h.runtime;
    const again = reduce(before, { ...rerunEvent('c', true, 'same'), now: h.now() });
    expect(again.runtime).toBe(before);
    expect(again.effects).toEqual([{ type: 'ignored', reason: 're-run request same was applied before' }]);
  });

  it('refuses, with a notice, a task that is running, queued or not yet run, a dependent that is running, an unknown task, and a workflow under a cancel; each is recorded as applied', () => {
    const h = new Harness(
      definition([{ name: 'a' }, { name: 'b', depends_on: ['a'] }, { name: 'c', depends_on: ['b'] }], { max_parallelism: 1 }),
    );
    const cases: Array<[Omit<RerunEvent, 'now'>, string]> = [];
    // a ready (not yet dispatched: not activated), b and c pending.
    cases.push([
      rerunEvent('a', false, 'q1'),
      're-run of "a" not applied: task "a" is queued now (ready, about to be dispatched): wait until it has finished',
    ]);
    cases.push([
      rerunEvent('b', false, 'q2'),
      're-run of "b" not applied: task "b" has not run yet (pending): it runs when its dependencies allow',
    ]);
    cases.push([rerunEvent('nope', true, 'q3'), 're-run of "nope" not applied: the workflow has no such task']);
    for (const [event, message] of cases.splice(0)) {
      const before = h.runtime;
      const result = h.send(event);
      expect(notices(result.effects)).toEqual([message]);
      expect(changedTasks(before, h.runtime)).toEqual([]);
    }
    h.activate();
    expect(notices(h.send(rerunEvent('a', true, 'q4')).effects)).toEqual([
      're-run of "a" not applied: task "a" is running now (attempt 1): wait until it has finished',
    ]);
    h.succeed('a');
    expect(notices(h.send(rerunEvent('a', true, 'q5')).effects)).toEqual([
      're-run of "a" not applied: task "b", which depends on "a", is running now (attempt 1): wait until it has finished',
    ]);
    // Without downstream the running dependent does not matter.
    expect(notices(h.send(rerunEvent('a', false, 'q6')).effects)).toEqual([]);
    // a is ready again, held back by max_parallelism 1 while b runs.
    expect(h.statuses()).toEqual({ a: 'ready', b: 'running', c: 'pending' });
    h.send({ type: 'cancel' });
    expect(notices(h.send(rerunEvent('a', false, 'q7')).effects)).toEqual([
      're-run of "a" not applied: workflow "wf1" is being cancelled: a re-run does not lift a cancel (retry the workflow first)',
    ]);
    expect(h.runtime.rerunsApplied?.map((r) => r.id)).toEqual(['q1', 'q2', 'q3', 'q4', 'q5', 'q6', 'q7']);
  });

  it('forgets an applied request once its record is no longer listed and it was applied long enough ago', () => {
    const h = diamond();
    h.send(rerunEvent('b', false, 'old'));
    h.succeed('b', '{"ok":true}');
    const appliedAt = h.runtime.rerunsApplied![0]!.at;
    // Still listed: kept, however old.
    h.advance(RERUN_FORGET_AFTER_MS / 1000 + 60);
    h.send(rerunEvent('c', false, 'new1', { recorded: ['old', 'new1'] }));
    h.succeed('c');
    expect(h.runtime.rerunsApplied?.map((r) => r.id)).toEqual(['old', 'new1']);
    // Not listed, applied over 10 minutes ago: forgotten. new1 was applied just now: kept.
    h.send(rerunEvent('c', false, 'new2', { recorded: ['new2'] }));
    h.succeed('c');
    expect(h.runtime.rerunsApplied?.map((r) => r.id)).toEqual(['new1', 'new2']);
    expect(appliedAt).not.toBe(h.runtime.rerunsApplied![0]!.at);
    // Without a listing nothing is forgotten.
    h.advance(RERUN_FORGET_AFTER_MS / 1000 + 60);
    h.send(rerunEvent('c', false, 'new3'));
    expect(h.runtime.rerunsApplied?.map((r) => r.id)).toEqual(['new1', 'new2', 'new3']);
  });

  it('gives the workflow its whole timeout_s again', () => {
    const h = new Harness(definition([{ name: 'a' }], { timeout_s: 60 }));
    h.activate();
    h.succeed('a');
    h.advance(1000);
    h.send(rerunEvent('a', false));
    expect(h.runtime.deadlineAt).toBe(new Date(Date.parse(h.runtime.updatedAt) + 60_000).toISOString());
  });

  it('stores the applied requests in the snapshot, the log and format 1', () => {
    const h = diamond();
    const before = h.runtime;
    h.send(rerunEvent('b', true));
    const after = h.runtime;
    expect(encodeSnapshot(before, { definitionHash: 'a'.repeat(64), generation: 1 })).not.toContain('reruns_applied');
    const meta = { workflowId: 'wf1', definitionHash: 'a'.repeat(64), generation: 1 };
    const parts = decodeSnapshot(encodeSnapshot(before, meta), before.definition, meta);
    const log = encodeDeltaRecord(1, before, after, changedTasks(before, after));
    expect(log).toContain('"reruns_applied":[{"id":"r-b","at":');
    for (const record of decodeLogRecords(log, before.definition)) if (record.kind === 'delta') applyDeltaRecord(parts, record);
    const replayed = assembleParts(parts);
    expect(replayed.rerunsApplied).toEqual(after.rerunsApplied);
    expect(decodeSnapshot(encodeSnapshot(after, meta), after.definition, meta).fields.rerunsApplied).toEqual(after.rerunsApplied);
    expect(decodedRuntime(encodeRuntime(after)).rerunsApplied).toEqual(after.rerunsApplied);
    expect(() => decodedRuntime(encodeRuntime(after).replace('"reruns_applied":[{', '"reruns_applied":[{"x":1,'))).toThrow(
      /reruns_applied/,
    );
  });
});

describe('planRerun', () => {
  it('names the tasks a request re-runs, or why it would not be applied', () => {
    const h = diamond();
    expect(planRerun(h.runtime, 'b', false)).toEqual({ ok: true, tasks: ['b'] });
    expect(planRerun(h.runtime, 'a', true)).toEqual({ ok: true, tasks: ['a', 'b', 'c', 'd'] });
    expect(planRerun(h.runtime, 'zz', true)).toEqual({
      ok: false,
      code: 'unknown-task',
      reason: 'workflow "wf1" has no task "zz" (its tasks: a, b, c, d, e)',
    });
    h.send(rerunEvent('b', false));
    expect(planRerun(h.runtime, 'a', true)).toEqual({
      ok: false,
      code: 'refused',
      reason: 'task "b", which depends on "a", is running now (attempt 2): wait until it has finished',
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Properties over random DAGs

interface Spec {
  /** Parents of task i, among tasks before it. */
  deps: number[][];
  policies: Array<'all' | 'any' | 'all_settled'>;
  retries: number[];
  /** Task i has a condition on its first parent's output. */
  conditions: boolean[];
  /** Outcome of (task, attempt): true = success; cycled. */
  outcomes: boolean[];
  target: number;
  downstream: boolean;
  /** More re-runs after the first, each (task, downstream). */
  more: Array<[number, boolean]>;
}

const specArb: fc.Arbitrary<Spec> = fc.integer({ min: 1, max: 9 }).chain((n) =>
  fc.record({
    deps: fc.tuple(
      ...Array.from({ length: n }, (_, i) =>
        i === 0 ? fc.constant([] as number[]) : fc.uniqueArray(fc.nat({ max: i - 1 }), { maxLength: 3 }),
      ),
    ),
    policies: fc.array(fc.constantFrom('all' as const, 'any' as const, 'all_settled' as const), { minLength: n, maxLength: n }),
    retries: fc.array(fc.nat({ max: 2 }), { minLength: n, maxLength: n }),
    conditions: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
    outcomes: fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
    target: fc.nat({ max: n - 1 }),
    downstream: fc.boolean(),
    more: fc.array(fc.tuple(fc.nat({ max: n - 1 }), fc.boolean()), { maxLength: 3 }),
  }),
);

function name(i: number): string {
  return `t${i}`;
}

/** The task and, with downstream, every task with a path from it, read off the spec. */
function expectedSet(spec: Spec, target: number, downstream: boolean): string[] {
  const set = new Set([target]);
  if (downstream) {
    for (let i = 0; i < spec.deps.length; i++) if (spec.deps[i]!.some((p) => set.has(p))) set.add(i);
  }
  return [...set].sort((a, b) => a - b).map(name);
}

/** Runs every dispatched attempt to its end (outcomes cycled), checking attempts never go down. */
function runToEnd(h: Harness, spec: Spec, counter: { k: number }, pending: Array<{ task: string; attemptNo: number }>): void {
  for (let guard = 0; guard < 500 && pending.length > 0; guard++) {
    const next = pending.shift()!;
    const before = h.runtime;
    const ok = spec.outcomes[counter.k++ % spec.outcomes.length]!;
    const result = ok
      ? h.succeed(next.task, `{"ok":${counter.k % 3 !== 0}}`, next.attemptNo)
      : h.fail(next.task, 'exit code 1', next.attemptNo);
    for (const [taskName, state] of tasksIn(h.runtime))
      expect(state.attemptNo).toBeGreaterThanOrEqual(taskState(before, taskName)!.attemptNo);
    for (const e of result.effects) if (e.type === 'dispatch') pending.push({ task: e.taskName, attemptNo: e.attemptNo });
  }
  expect(pending).toEqual([]);
}

describe('rerun properties', () => {
  it('re-runs exactly the task and, with downstream, its transitive dependents; no attempt number ever goes down', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const def = definition(
          spec.deps.map((deps, i) => ({
            name: name(i),
            ...(deps.length > 0 ? { depends_on: deps.map(name), dep_policy: spec.policies[i] } : {}),
            num_retries: spec.retries[i],
            ...(spec.conditions[i] && deps.length > 0 ? { condition: `inputs.${name(deps[0]!)}.ok` } : {}),
          })),
        );
        const h = new Harness(def);
        const counter = { k: 0 };
        const pending: Array<{ task: string; attemptNo: number }> = [];
        const first = h.activate();
        for (const e of first.effects) if (e.type === 'dispatch') pending.push({ task: e.taskName, attemptNo: e.attemptNo });
        runToEnd(h, spec, counter, pending);
        const reruns: Array<[number, boolean]> = [[spec.target, spec.downstream], ...spec.more];
        reruns.forEach(([target, downstream], i) => {
          const before: WorkflowRuntime = h.runtime;
          const plan = planRerun(before, name(target), downstream);
          const result = h.send(rerunEvent(name(target), downstream, `p${i}`));
          // The workflow had finished: every task is terminal, so every re-run is applied.
          expect(plan).toEqual({ ok: true, tasks: expectedSet(spec, target, downstream) });
          expect(changedTasks(before, h.runtime)).toEqual(expectedSet(spec, target, downstream));
          expect(notices(result.effects)).toEqual([]);
          for (const [taskName, state] of tasksIn(h.runtime)) {
            const old = taskState(before, taskName)!;
            expect(state.attemptNo).toBeGreaterThanOrEqual(old.attemptNo);
            // A task dispatched again gets the attempt after its last one.
            if (state.status === 'running' && old.status !== 'running') expect(state.attemptNo).toBe(old.attemptNo + 1);
          }
          for (const e of result.effects) if (e.type === 'dispatch') pending.push({ task: e.taskName, attemptNo: e.attemptNo });
          runToEnd(h, spec, counter, pending);
          expect(['completed', 'failed']).toContain(h.runtime.status);
          expect(h.runtime.finishedAt).not.toBeNull();
        });
        expect(h.runtime.rerunsApplied?.map((r) => r.id)).toEqual(reruns.map((_, i) => `p${i}`));
      }),
      { numRuns: 300 },
    );
  });
});
