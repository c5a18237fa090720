import { describe, expect, it } from '@jest/globals';
import { encodeTaskMessage, type CompactUpstreamRefs } from '../wire/index';
import { sequentializeFanIn } from '../transform/fan-in';
import { encodeRuntime } from './codec';
import { createRuntime } from './create';
import { foldEvents, reduce } from './reduce';
import { Harness, at, decodedRuntime, definition } from './test-helpers/build';
import type { DispatchEffect } from './types';

const diamond = definition([
  { name: 'a' },
  { name: 'b', depends_on: ['a'] },
  { name: 'c', depends_on: ['a'] },
  { name: 'd', depends_on: ['b', 'c'] },
]);

function upstreamOf(effect: DispatchEffect): CompactUpstreamRefs | null {
  return effect.message.upstream ?? null;
}

describe('createRuntime', () => {
  it('starts pending, not activated, with roots ready and the rest pending', () => {
    const rt = createRuntime(diamond, { workflowId: 'wf1', now: at(0) });
    expect(rt.status).toBe('pending');
    expect(rt.activated).toBe(false);
    expect(Object.fromEntries(Object.entries(rt.tasks).map(([n, t]) => [n, [t.status, t.attemptNo, t.retryBase]]))).toEqual({
      a: ['ready', 0, 0],
      b: ['pending', 0, 0],
      c: ['pending', 0, 0],
      d: ['pending', 0, 0],
    });
    expect(rt.counts).toMatchObject({ ready: 1, pending: 3, running: 0 });
  });
});

describe('activate', () => {
  it('dispatches the ready tasks as attempt 1 and marks them running', () => {
    const h = new Harness(diamond);
    const { effects, runtime } = h.activate();
    expect(effects).toEqual([
      expect.objectContaining({ type: 'dispatch', taskName: 'a', queue: 'default', attemptNo: 1, messageId: 'wf1/a/1' }),
    ]);
    expect(runtime.status).toBe('running');
    expect(runtime.tasks.a).toMatchObject({ status: 'running', attemptNo: 1, dispatchedAt: at(1), startedAt: null });
  });

  it('never re-dispatches a running task, and returns the same object when there is nothing to do', () => {
    const h = new Harness(diamond);
    h.activate();
    const before = h.runtime;
    const again = h.activate();
    expect(again.runtime).toBe(before);
    expect(again.effects).toEqual([]);
  });

  it('dispatches nothing before activation, even on a completion of an unknown task', () => {
    const h = new Harness(diamond);
    const r = h.send({ type: 'completion', taskName: 'zz', attemptNo: 1, success: true, outputRef: null, error: null });
    expect(r.effects).toEqual([{ type: 'ignored', reason: expect.stringContaining('unknown task') }]);
  });
});

describe('completions (docs/design.md#which-completions-apply)', () => {
  it('runs a diamond to completion, dispatching children as parents finish', () => {
    const h = new Harness(diamond);
    h.activate();
    h.succeed('a', '{"n":1}');
    expect(h.dispatched()).toEqual(['b', 'c']);
    h.succeed('b');
    expect(h.dispatched()).toEqual([]);
    h.succeed('c');
    expect(h.dispatched()).toEqual(['d']);
    const end = h.succeed('d');
    expect(end.effects).toEqual([{ type: 'workflow-finished', status: 'completed' }]);
    expect(h.runtime.status).toBe('completed');
    expect(h.runtime.finishedAt).toBe(end.runtime.updatedAt);
    expect(h.runtime.tasks.a).toMatchObject({ outputRef: '{"n":1}', completedAt: at(2) });
  });

  it('ignores a duplicate, returning the same runtime object', () => {
    const h = new Harness(diamond);
    h.activate();
    h.succeed('a', null, 1);
    const before = h.runtime;
    const dup = h.succeed('a', null, 1);
    expect(dup.runtime).toBe(before);
    expect(dup.effects).toEqual([{ type: 'ignored', reason: expect.stringContaining('completed') }]);
  });

  it('ignores a stale attempt, a completion of a pending task and of an unknown task', () => {
    const h = new Harness(
      definition([
        { name: 'a', num_retries: 1 },
        { name: 'b', depends_on: ['a'] },
      ]),
    );
    h.activate();
    h.fail('a', 'boom', 1); // re-armed, dispatched as attempt 2
    expect(h.runtime.tasks.a).toMatchObject({ status: 'running', attemptNo: 2 });
    for (const event of [
      { taskName: 'a', attemptNo: 1 },
      { taskName: 'b', attemptNo: 1 },
      { taskName: 'zz', attemptNo: 1 },
    ]) {
      const before = h.runtime;
      const r = h.send({ type: 'completion', success: true, outputRef: null, error: null, ...event });
      expect(r.runtime).toBe(before);
      expect(r.effects).toHaveLength(1);
      expect(r.effects[0]?.type).toBe('ignored');
    }
  });

  it('applies a completion one attempt above the stored one (the flush after the push was lost) and raises the attempt', () => {
    const h = new Harness(diamond);
    h.activate();
    const r = h.succeed('a', null, 2);
    expect(r.runtime.tasks.a).toMatchObject({ status: 'completed', attemptNo: 2 });
  });

  it('ignores a completion more than one attempt above the stored one (never dispatched), however large', () => {
    const h = new Harness(definition([{ name: 'a', num_retries: 1 }]));
    h.activate();
    for (const attempt of [3, 1000, Number.MAX_SAFE_INTEGER]) {
      const r = h.send({ type: 'completion', taskName: 'a', attemptNo: attempt, success: false, outputRef: null, error: 'x' });
      expect(r.effects).toEqual([
        { type: 'ignored', reason: expect.stringContaining(`attempt ${attempt} while the task is running at attempt 1`) },
      ]);
    }
    // The defect: 2^53−1 was applied, and the retry after it made reduce throw (attempt 2^53 is not a safe integer).
    h.fail('a');
    h.fail('a');
    expect(h.send({ type: 'retry' }).runtime.tasks.a).toMatchObject({ status: 'running', attemptNo: 3 });
  });

  it('records when the worker started the attempt', () => {
    const h = new Harness(diamond);
    h.activate();
    h.send({
      type: 'completion',
      taskName: 'a',
      attemptNo: 1,
      success: true,
      outputRef: null,
      error: null,
      startedAt: '2026-01-01T00:00:01.500Z',
    });
    expect(h.runtime.tasks.a).toMatchObject({ status: 'completed', dispatchedAt: at(1), startedAt: '2026-01-01T00:00:01.500Z' });
  });

  it('applies a completion to a ready task that was dispatched but not yet recorded', () => {
    const h = new Harness(diamond); // a is ready at attempt 0, not activated
    const r = h.succeed('a', null, 1);
    expect(r.runtime.tasks.a).toMatchObject({ status: 'completed', attemptNo: 1 });
    expect(r.effects.map((e) => e.type)).toEqual(['dispatch', 'dispatch']);
  });

  it('reads a missing attempt as the current one', () => {
    const h = new Harness(diamond);
    h.activate();
    expect(h.succeed('a', null, null).runtime.tasks.a).toMatchObject({ status: 'completed', attemptNo: 1 });
    expect(h.succeed('a', null, null).effects[0]?.type).toBe('ignored');
  });
});

describe('retries (docs/design.md#which-completions-apply)', () => {
  it('re-arms a failure while attempts remain, then fails and cascades upstream_failed', () => {
    const h = new Harness(
      definition([
        { name: 'a', num_retries: 2 },
        { name: 'b', depends_on: ['a'] },
        { name: 'c', depends_on: ['b'] },
      ]),
    );
    h.activate();
    h.fail('a', 'first');
    expect(h.last?.effects).toEqual([expect.objectContaining({ type: 'dispatch', taskName: 'a', attemptNo: 2, messageId: 'wf1/a/2' })]);
    expect(h.runtime.tasks.a).toMatchObject({ status: 'running', attemptNo: 2, error: 'first' });
    h.fail('a', 'second');
    expect(h.runtime.tasks.a).toMatchObject({ status: 'running', attemptNo: 3 });
    const end = h.fail('a', 'third');
    expect(h.statuses()).toEqual({ a: 'failed', b: 'upstream_failed', c: 'upstream_failed' });
    expect(h.runtime.tasks.a?.error).toBe('third');
    expect(h.runtime.tasks.c?.error).toContain('"b"');
    expect(end.effects).toEqual([{ type: 'workflow-finished', status: 'failed' }]);
  });
});

describe('dependency policies (docs/workflow-language.md#dependency-policies)', () => {
  const three = (policy: unknown, extra: Record<string, unknown> = {}) =>
    definition([
      { name: 'p1' },
      { name: 'p2' },
      { name: 'p3' },
      { name: 'c', depends_on: ['p1', 'p2', 'p3'], dep_policy: policy, ...extra },
    ]);

  it('all: waits for every parent, blocks on the first failure', () => {
    const h = new Harness(three('all'));
    h.activate();
    h.succeed('p1');
    h.succeed('p2');
    expect(h.status('c')).toBe('pending');
    h.fail('p3');
    expect(h.status('c')).toBe('upstream_failed');
  });

  it('any: ready on the first success, blocked only when every parent blocks', () => {
    const h = new Harness(three('any'));
    h.activate();
    h.fail('p1');
    h.fail('p2');
    expect(h.status('c')).toBe('pending');
    h.succeed('p3');
    expect(h.status('c')).toBe('running');
    const h2 = new Harness(three('any'));
    h2.activate();
    h2.fail('p1');
    h2.fail('p2');
    h2.fail('p3');
    expect(h2.status('c')).toBe('upstream_failed');
  });

  it('all_settled: waits for every parent, runs when at least one succeeded', () => {
    const h = new Harness(three('all_settled'));
    h.activate();
    h.succeed('p1');
    h.fail('p2');
    expect(h.status('c')).toBe('pending');
    h.fail('p3');
    expect(h.status('c')).toBe('running');
  });

  it('N: ready at N successes, blocked once fewer than N can still succeed', () => {
    const h = new Harness(three(2));
    h.activate();
    h.succeed('p1');
    expect(h.status('c')).toBe('pending');
    h.succeed('p2');
    expect(h.status('c')).toBe('running');
    const h2 = new Harness(three(2));
    h2.activate();
    h2.fail('p1');
    expect(h2.status('c')).toBe('pending');
    h2.fail('p2');
    expect(h2.status('c')).toBe('upstream_failed');
  });

  it('does not change a task once it left pending', () => {
    const h = new Harness(three('any'));
    h.activate();
    h.succeed('p1');
    h.fail('p2');
    expect(h.status('c')).toBe('running');
  });
});

describe('conditions (docs/conditions.md)', () => {
  const cond = (expression: string) =>
    definition([{ name: 'a' }, { name: 'b', depends_on: ['a'], condition: expression }, { name: 'c', depends_on: ['b'] }]);

  it('runs the task when the condition on inline outputs is true', () => {
    const h = new Harness(cond('inputs.a.score > 0.5'));
    h.activate();
    h.succeed('a', '{"score":0.9}');
    expect(h.dispatched()).toEqual(['b']);
  });

  it('skips on false; a skip satisfies children and does not cascade', () => {
    const h = new Harness(cond('inputs.a.score > 0.5'));
    h.activate();
    h.succeed('a', '{"score":0.1}');
    expect(h.runtime.tasks.b).toMatchObject({ status: 'skipped', error: 'condition false: inputs.a.score = 0.1, not > 0.5' });
    expect(h.dispatched()).toEqual(['c']);
  });

  it('skips with the error when evaluation fails', () => {
    const h = new Harness(cond('inputs.a.score > 0.5'));
    h.activate();
    h.succeed('a', '{"score":"high"}');
    expect(h.runtime.tasks.b?.status).toBe('skipped');
    expect(h.runtime.tasks.b?.error).toBe('condition error: cannot compare str and float with > (column 16)');
  });

  it('skips an unknown condition (a null compared) like a false one, saying which value is null', () => {
    const h = new Harness(cond('inputs.a.score > 0.5'));
    h.activate();
    h.succeed('a', '{"score":null}');
    expect(h.runtime.tasks.b).toMatchObject({ status: 'skipped', error: 'condition false: inputs.a.score is null' });
  });

  it("names a field missing from a completed parent's output and the fields it has", () => {
    const h = new Harness(cond('inputs.a.acc > 0.9'));
    h.activate();
    h.succeed('a', '{"accuracy":0.95,"loss":0.1}');
    expect(h.runtime.tasks.b).toMatchObject({
      status: 'skipped',
      error: 'condition false: output of "a" has no field "acc"; it has: accuracy, loss',
    });
  });

  it('runs the README example: all_settled with any() over two trainers, one failed and one above the bar', () => {
    const h = new Harness(
      definition([
        { name: 'train-gpu' },
        { name: 'train-cpu' },
        {
          name: 'compare',
          depends_on: ['train-gpu', 'train-cpu'],
          dep_policy: 'all_settled',
          condition: 'any(inputs["train-*"].accuracy > 0.9)',
        },
      ]),
    );
    h.activate();
    h.fail('train-gpu', 'CUDA out of memory');
    h.succeed('train-cpu', '{"accuracy":0.93}');
    expect(h.dispatched()).toEqual(['compare']);

    const below = new Harness(
      definition([
        { name: 'train-gpu' },
        { name: 'train-cpu' },
        {
          name: 'compare',
          depends_on: ['train-gpu', 'train-cpu'],
          dep_policy: 'all_settled',
          condition: 'any(inputs["train-*"].accuracy > 0.9)',
        },
      ]),
    );
    below.activate();
    below.fail('train-gpu', 'CUDA out of memory');
    below.succeed('train-cpu', '{"accuracy":0.85}');
    expect(below.runtime.tasks.compare).toMatchObject({
      status: 'skipped',
      error: 'condition false: inputs["train-cpu"].accuracy = 0.85, not > 0.9; inputs["train-gpu"].accuracy is null (train-gpu failed)',
    });
  });

  it('reads a parent without output as null', () => {
    const h = new Harness(cond('inputs.a == None'));
    h.activate();
    h.succeed('a', null);
    expect(h.dispatched()).toEqual(['b']);
  });

  it('asks for blob outputs with an effect and decides when they arrive', () => {
    const h = new Harness(cond('inputs.a.ok'));
    h.activate();
    const ref = 'blob:test-outputs/wf1/a.json:1B2M2Y8AsgTpgAmY7PhCfg==';
    const r = h.succeed('a', ref);
    expect(r.effects).toEqual([{ type: 'fetch-condition-inputs', taskName: 'b', refs: { a: ref } }]);
    expect(h.runtime.tasks.b).toMatchObject({ status: 'pending', awaitingInputs: true });
    // After a restart, activate asks again.
    expect(h.activate().effects).toEqual([{ type: 'fetch-condition-inputs', taskName: 'b', refs: { a: ref } }]);
    h.send({ type: 'condition-inputs', taskName: 'b', inputs: { a: { ok: true } }, errors: {} });
    expect(h.runtime.tasks.b).toMatchObject({ status: 'running', awaitingInputs: false });
    // A second answer is ignored.
    const again = h.send({ type: 'condition-inputs', taskName: 'b', inputs: { a: { ok: false } }, errors: {} });
    expect(again.effects[0]?.type).toBe('ignored');
  });

  it('skips with the read error when a blob output cannot be fetched', () => {
    const h = new Harness(cond('inputs.a.ok'));
    h.activate();
    h.succeed('a', 'blob:test-outputs/wf1/a.json');
    h.send({ type: 'condition-inputs', taskName: 'b', inputs: {}, errors: { a: 'md5 mismatch' } });
    expect(h.runtime.tasks.b).toMatchObject({ status: 'skipped', error: 'could not read the output of "a": md5 mismatch' });
    expect(h.dispatched()).toEqual(['c']);
  });

  it('skips, without throwing, when a parent output ref has an unknown form', () => {
    const h = new Harness(cond('inputs.a.ok'));
    h.activate();
    h.succeed('a', 'ftp://nowhere');
    expect(h.runtime.tasks.b?.status).toBe('skipped');
  });
});

describe('cancellation (docs/design.md#cancel-and-retry-requests)', () => {
  it('cancels pending and ready tasks, dispatches nothing more, and records running completions', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b' }, { name: 'c', depends_on: ['a'] }], { max_parallelism: 1 }));
    h.activate();
    expect(h.statuses()).toEqual({ a: 'running', b: 'ready', c: 'pending' });
    h.send({ type: 'cancel' });
    expect(h.statuses()).toEqual({ a: 'running', b: 'cancelled', c: 'cancelled' });
    expect(h.runtime.status).toBe('cancelling');
    const end = h.succeed('a');
    expect(h.dispatched()).toEqual([]);
    expect(h.statuses()).toEqual({ a: 'completed', b: 'cancelled', c: 'cancelled' });
    expect(end.effects).toEqual([{ type: 'workflow-finished', status: 'cancelled' }]);
  });

  it('turns a failure after cancel into cancelled, even with retries left', () => {
    const h = new Harness(definition([{ name: 'a', num_retries: 3 }]));
    h.activate();
    h.send({ type: 'cancel' });
    h.fail('a', 'SIGTERM');
    expect(h.runtime.tasks.a).toMatchObject({ status: 'cancelled', error: 'SIGTERM' });
    expect(h.runtime.status).toBe('cancelled');
  });

  it('ignores a request not newer than the last applied, and says so for a finished workflow', () => {
    const h = new Harness(definition([{ name: 'a' }]));
    h.activate();
    h.succeed('a');
    const done = h.send({ type: 'cancel', requestedAt: at(50) });
    expect(done.effects).toEqual([{ type: 'notice', message: 'workflow already completed: nothing to cancel' }]);
    expect(h.runtime.status).toBe('completed');
    const before = h.runtime;
    const old = h.send({ type: 'cancel', requestedAt: at(50) });
    expect(old.runtime).toBe(before);
    expect(old.effects[0]?.type).toBe('ignored');
  });
});

describe('workflow retry (docs/design.md#cancel-and-retry-requests)', () => {
  it('resets failed, upstream_failed and cancelled tasks with a fresh budget and new attempt numbers', () => {
    const h = new Harness(definition([{ name: 'a', num_retries: 1 }, { name: 'b', depends_on: ['a'] }, { name: 'ok' }]));
    h.activate();
    h.succeed('ok', '{"v":1}');
    h.fail('a');
    h.fail('a');
    expect(h.statuses()).toEqual({ a: 'failed', b: 'upstream_failed', ok: 'completed' });
    const r = h.send({ type: 'retry' });
    expect(r.effects).toEqual([expect.objectContaining({ type: 'dispatch', taskName: 'a', attemptNo: 3, messageId: 'wf1/a/3' })]);
    expect(h.runtime.tasks.a).toMatchObject({ status: 'running', retryBase: 2 });
    expect(h.runtime.tasks.ok).toMatchObject({ status: 'completed', outputRef: '{"v":1}' });
    expect(h.runtime.status).toBe('running');
    h.fail('a'); // attempt 3 - base 2 = 1 ≤ 1: one more try
    expect(h.runtime.tasks.a).toMatchObject({ status: 'running', attemptNo: 4 });
    h.succeed('a');
    h.succeed('b');
    expect(h.runtime.status).toBe('completed');
  });

  it('lifts a cancel, and re-evaluates conditions at once', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b', depends_on: ['a'], condition: 'inputs.a.go' }]));
    h.activate();
    h.send({ type: 'cancel' });
    h.succeed('a', '{"go":true}');
    expect(h.statuses()).toEqual({ a: 'completed', b: 'cancelled' });
    h.send({ type: 'retry' });
    expect(h.runtime.cancelRequested).toBe(false);
    expect(h.dispatched()).toEqual(['b']);
  });

  it('is a no-op with a notice when nothing failed, and ignores an old request', () => {
    const h = new Harness(definition([{ name: 'a' }]));
    h.activate();
    const r = h.send({ type: 'retry', requestedAt: at(40) });
    expect(r.effects).toEqual([{ type: 'notice', message: expect.stringContaining('nothing to retry') }]);
    expect(h.runtime.retryAppliedAt).toBe(at(40));
    expect(h.send({ type: 'retry', requestedAt: at(40) }).effects[0]?.type).toBe('ignored');
  });

  it('lifts a cancel even when nothing is left to retry (the latest request wins)', () => {
    const h = new Harness(definition([{ name: 't0', num_retries: 2 }]));
    h.activate();
    h.send({ type: 'cancel' });
    expect(h.runtime.status).toBe('cancelling');
    const r = h.send({ type: 'retry' });
    expect(r.effects).toEqual([{ type: 'notice', message: expect.stringContaining('nothing to retry') }]);
    expect(h.runtime.cancelRequested).toBe(false);
    expect(h.runtime.status).toBe('running');
    h.fail('t0');
    expect(h.runtime.tasks.t0).toMatchObject({ status: 'running', attemptNo: 2 });
    h.succeed('t0');
    expect(h.runtime.status).toBe('completed');
  });

  it('re-evaluates a task waiting for condition inputs when a parent starts over', () => {
    const h = new Harness(
      definition([
        { name: 't0' },
        { name: 't1' },
        { name: 't2', depends_on: ['t0', 't1'], dep_policy: 'all_settled', condition: 'inputs.t0.ok' },
      ]),
    );
    h.activate();
    h.fail('t1');
    h.succeed('t0', 'blob:test-outputs/wf1/t0.json');
    expect(h.runtime.tasks.t2).toMatchObject({ status: 'pending', awaitingInputs: true });
    h.send({ type: 'retry' });
    expect(h.runtime.tasks.t2).toMatchObject({ status: 'pending', awaitingInputs: false });
    expect(h.runtime.tasks.t1?.status).toBe('running');
    // The answer to the old request comes late: t1 has not settled again, so t2 must not run yet.
    expect(h.send({ type: 'condition-inputs', taskName: 't2', inputs: { t0: { ok: true } }, errors: {} }).effects[0]?.type).toBe('ignored');
    const r = h.fail('t1');
    expect(r.effects).toEqual([{ type: 'fetch-condition-inputs', taskName: 't2', refs: { t0: 'blob:test-outputs/wf1/t0.json' } }]);
  });

  it('keeps the cancel when the retry request is older than it', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b' }], { max_parallelism: 1 }));
    h.activate();
    h.send({ type: 'cancel', requestedAt: at(30) });
    const r = h.send({ type: 'retry', requestedAt: at(20) });
    expect(r.effects).toEqual([{ type: 'notice', message: expect.stringContaining('the cancel stands') }]);
    expect(h.runtime.cancelRequested).toBe(true);
  });
});

describe('a cancel followed by a retry', () => {
  const cancelAt = '2026-01-01T00:00:05.000Z';
  const retryAt = '2026-01-01T00:00:06.000Z';

  it('a stopped-by-cancel failure that arrives after the retry re-arms the task without spending its budget', () => {
    // The defect: the worker was still stopping "b" when the retry came; its "stopped: workflow
    // cancelled" failure then failed the retried workflow (num_retries 0) and "c" upstream_failed.
    const h = new Harness(definition([{ name: 'a' }, { name: 'b' }, { name: 'c', depends_on: ['a', 'b'] }]));
    h.activate();
    h.fail('a');
    h.send({ type: 'cancel', requestedAt: cancelAt });
    h.send({ type: 'retry', requestedAt: retryAt });
    expect(h.statuses()).toMatchObject({ a: 'running', b: 'running', c: 'pending' });
    const r = h.send({
      type: 'completion',
      taskName: 'b',
      attemptNo: 1,
      success: false,
      outputRef: null,
      error: 'stopped: workflow cancelled',
      cancelled: true,
    });
    expect(r.runtime.tasks.b).toMatchObject({ status: 'running', attemptNo: 2, retryBase: 1 });
    expect(r.runtime.status).toBe('running');
    h.succeed('a');
    h.succeed('b');
    h.succeed('c');
    expect(h.runtime.status).toBe('completed');
  });

  it('recognises the cancel texts of workers that do not set the flag', () => {
    const h = new Harness(definition([{ name: 'b' }]));
    h.activate();
    h.send({ type: 'cancel', requestedAt: cancelAt });
    h.send({ type: 'retry', requestedAt: retryAt });
    h.fail('b', 'workflow cancelled');
    expect(h.runtime.tasks.b).toMatchObject({ status: 'running', attemptNo: 2 });
  });

  it('while the cancel stands, a cancel-caused failure ends the task cancelled; a real failure after a retry still fails', () => {
    const h = new Harness(definition([{ name: 'b' }, { name: 'x' }]));
    h.activate();
    h.send({ type: 'cancel', requestedAt: cancelAt });
    h.send({
      type: 'completion',
      taskName: 'b',
      attemptNo: 1,
      success: false,
      outputRef: null,
      error: 'stopped: workflow cancelled',
      cancelled: true,
    });
    expect(h.status('b')).toBe('cancelled');
    h.send({ type: 'retry', requestedAt: retryAt });
    h.fail('x', 'exit code 1');
    expect(h.status('x')).toBe('failed');
  });
});

describe('corrupt workflows', () => {
  it('a corrupt event sets the workflow aside for good: status corrupt with the reason, every later event ignored', () => {
    const h = new Harness(diamond);
    h.activate();
    const r = h.send({ type: 'corrupt', reason: 'reduce threw: RangeError' });
    expect(r.runtime).toMatchObject({ status: 'corrupt', corruptReason: 'reduce threw: RangeError', finishedAt: at(2) });
    expect(r.effects).toEqual([{ type: 'workflow-finished', status: 'corrupt' }]);
    for (const event of [
      { type: 'activate' },
      { type: 'retry' },
      { type: 'cancel' },
      { type: 'completion', taskName: 'a', attemptNo: 1, success: true, outputRef: null, error: null },
    ] as const) {
      expect(h.send(event).effects).toEqual([
        { type: 'ignored', reason: 'the workflow is corrupt (reduce threw: RangeError): it takes no more events' },
      ]);
    }
    expect(decodedRuntime(encodeRuntime(h.runtime))).toMatchObject({ status: 'corrupt', corruptReason: 'reduce threw: RangeError' });
  });
});

describe('max_parallelism (docs/workflow-language.md#max_parallelism)', () => {
  it('keeps at most N running and dispatches the rest in definition order as slots free', () => {
    const h = new Harness(definition([{ name: 't1' }, { name: 't2' }, { name: 't3' }, { name: 't4' }], { max_parallelism: 2 }));
    expect(h.activate().effects.map((e) => (e.type === 'dispatch' ? e.taskName : e.type))).toEqual(['t1', 't2']);
    h.succeed('t2');
    expect(h.dispatched()).toEqual(['t3']);
    h.fail('t1');
    expect(h.dispatched()).toEqual(['t4']);
    expect(h.runtime.counts.running).toBe(2);
  });
});

describe('lost tasks (timeouts are enforced by workers)', () => {
  const sweep = { type: 'timeout-sweep', messageTtlInMs: 100_000, graceInMs: 10_000 } as const;

  it('never fails a task that may still be waiting in its queue: only past message lifetime + timeout + grace', () => {
    // The defect: 4 tasks of timeout_s 3 on one worker; those still queued failed at 3 s, and a
    // success that arrived after its sweep was ignored.
    const h = new Harness(
      definition([
        { name: 'a', timeout_s: 60, num_retries: 1 },
        { name: 'b', timeout_s: 600 },
      ]),
    );
    h.activate();
    h.advance(70);
    expect(h.send(sweep).effects[0]).toEqual({ type: 'ignored', reason: 'no running task is overdue' });
    h.advance(95);
    expect(h.send(sweep).effects[0]?.type).toBe('ignored'); // 168 s after dispatch: ≤ 100 + 60 + 10
    h.advance(5);
    const r = h.send(sweep); // 174 s
    expect(r.effects).toEqual([expect.objectContaining({ type: 'dispatch', taskName: 'a', attemptNo: 2 })]);
    expect(h.runtime.tasks.a?.error).toBe(
      'no completion within 170s of its dispatch (message lifetime 100s + timeout_s 60 + grace 10s): its message was lost or its worker died without reporting',
    );
    expect(h.runtime.tasks.b?.status).toBe('running');
    expect(h.succeed('a', null, 1).effects[0]?.type).toBe('ignored');
  });

  it('a success that arrives long after dispatch is applied while no sweep declared the task lost', () => {
    const h = new Harness(definition([{ name: 'a', timeout_s: 3 }]));
    h.activate();
    h.advance(3600);
    expect(h.send({ type: 'timeout-sweep' }).effects[0]?.type).toBe('ignored'); // default lifetime: 7 days
    expect(h.succeed('a').runtime.tasks.a?.status).toBe('completed');
  });

  it('never declares a task lost when task messages never expire, or when the task has no timeout', () => {
    const h = new Harness(definition([{ name: 'a', timeout_s: 1 }, { name: 'b' }]));
    h.activate();
    h.advance(80_000);
    expect(h.send({ ...sweep, messageTtlInMs: null }).effects[0]).toEqual({
      type: 'ignored',
      reason: 'task messages never expire: no running task can be declared lost',
    });
    expect(h.send({ ...sweep, messageTtlInMs: 1 }).runtime.tasks).toMatchObject({ a: { status: 'failed' }, b: { status: 'running' } });
  });

  it('sends the timeout in the task message, so workers enforce it too', () => {
    const h = new Harness(definition([{ name: 'a', timeout_s: 60 }, { name: 'b' }], { default_task_timeout_s: 5 }));
    const timeouts = h.activate().effects.map((e) => {
      if (e.type !== 'dispatch') return null;
      return e.message.timeoutS;
    });
    expect(timeouts).toEqual([60, 5]);
  });

  it('uses default_task_timeout_s, and fails for good once the budget is spent', () => {
    const h = new Harness(definition([{ name: 'a' }], { default_task_timeout_s: 5 }));
    h.activate();
    h.advance(116);
    const r = h.send(sweep);
    expect(h.runtime.tasks.a).toMatchObject({ status: 'failed', error: expect.stringContaining('timeout_s 5') });
    expect(r.effects).toEqual([{ type: 'workflow-finished', status: 'failed' }]);
  });

  it('reads runtimes written before dispatched_at existed (started_at was the dispatch time)', () => {
    const h = new Harness(definition([{ name: 'a', timeout_s: 5 }]));
    h.activate();
    const old = JSON.parse(encodeRuntime(h.runtime)) as { tasks: Record<string, Record<string, unknown>> };
    const a = old.tasks.a!;
    a.started_at = a.dispatched_at;
    delete a.dispatched_at;
    expect(decodedRuntime(JSON.stringify(old)).tasks.a).toMatchObject({ dispatchedAt: at(1), startedAt: null });
  });
});

describe('workflow status (docs/workflow-language.md#workflow-status-and-result_policy)', () => {
  it('all_sinks_succeed: a failed non-sink with a succeeding sink still completes', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b' }, { name: 'sink', depends_on: ['a', 'b'], dep_policy: 'any' }]));
    h.activate();
    h.fail('a');
    h.succeed('b');
    h.succeed('sink');
    expect(h.runtime.status).toBe('completed');
  });

  it('all_tasks_succeed: any blocking task fails the workflow', () => {
    const h = new Harness(
      definition([{ name: 'a' }, { name: 'b' }, { name: 'sink', depends_on: ['a', 'b'], dep_policy: 'any' }], {
        result_policy: 'all_tasks_succeed',
      }),
    );
    h.activate();
    h.fail('a');
    h.succeed('b');
    h.succeed('sink');
    expect(h.runtime.status).toBe('failed');
  });

  it('fails when every task was skipped or nothing completed', () => {
    const h = new Harness(definition([{ name: 'a' }]));
    h.activate();
    h.fail('a');
    expect(h.runtime.status).toBe('failed');
  });
});

describe('merge nodes and gates (docs/workflow-language.md#wide-fan-ins)', () => {
  it('completes merge nodes without dispatching them, honours gates, and sends the real parents to the target', () => {
    const base = definition([
      { name: 'l0' },
      { name: 'l1' },
      { name: 'l2' },
      { name: 'l3' },
      { name: 'join', depends_on: ['l0', 'l1', 'l2', 'l3'] },
    ]);
    const t = sequentializeFanIn(base, 2);
    if (!t.ok) throw new Error('transform failed');
    const h = new Harness(t.value);
    expect(h.activate().effects.map((e) => (e.type === 'dispatch' ? e.taskName : e.type))).toEqual(['l0', 'l1']);
    expect(h.statuses()).toMatchObject({ l2: 'pending', l3: 'pending' }); // gated on __merge_join_0
    h.succeed('l0', '{"x":0}');
    expect(h.dispatched()).toEqual([]);
    h.succeed('l1', 'blob:test-outputs/outputs/wf1/l1/1.json:1B2M2Y8AsgTpgAmY7PhCfg==');
    expect(h.runtime.tasks.__merge_join_0?.status).toBe('completed');
    expect(h.dispatched()).toEqual(['l2', 'l3']);
    h.succeed('l2');
    h.succeed('l3', '{"x":3}');
    const dispatch = h.last?.effects.find((e): e is DispatchEffect => e.type === 'dispatch');
    expect(dispatch?.taskName).toBe('join');
    expect(upstreamOf(dispatch!)).toEqual({ s: { '1': ['l1'] }, i: { l0: '{"x":0}', l3: '{"x":3}' }, n: ['l2'] });
    expect(h.effects.some((e) => e.type === 'dispatch' && e.taskName.startsWith('__merge_'))).toBe(false);
  });

  it('keeps the dependencies of the fan-in target in the definition once it was dispatched (the stored definition sees them)', () => {
    const t = sequentializeFanIn(
      definition([{ name: 'l0' }, { name: 'l1' }, { name: 'l2' }, { name: 'join', depends_on: ['l0', 'l1', 'l2'] }]),
      2,
    );
    if (!t.ok) throw new Error('transform failed');
    const h = new Harness(t.value);
    h.activate();
    h.succeed('l0');
    h.succeed('l1');
    h.succeed('l2');
    expect(h.dispatched()).toEqual(['join']);
    const join = h.runtime.definition.tasks.find((d) => d.name === 'join');
    expect(join?.dependsOn).toEqual(['__merge_join_1']);
    expect(decodedRuntime(encodeRuntime(h.runtime)).definition.tasks.find((d) => d.name === 'join')?.dependsOn).toEqual(['__merge_join_1']);
  });

  it('fails a gated batch when the gate fails', () => {
    const t = sequentializeFanIn(
      definition([{ name: 'l0' }, { name: 'l1' }, { name: 'l2' }, { name: 'join', depends_on: ['l0', 'l1', 'l2'] }]),
      2,
    );
    if (!t.ok) throw new Error('transform failed');
    const h = new Harness(t.value);
    h.activate();
    h.fail('l0');
    expect(h.statuses()).toMatchObject({ __merge_join_0: 'upstream_failed', l2: 'upstream_failed', join: 'upstream_failed' });
    expect(h.runtime.status).toBe('running');
    h.succeed('l1');
    expect(h.runtime.status).toBe('failed');
  });
});

describe('task messages (docs/design.md#task-message)', () => {
  it('carries the kwargs, ids and the compact refs of completed and skipped parents only', () => {
    const h = new Harness(
      definition([
        { name: 'a' },
        { name: 'b', condition: 'inputs.a.go', depends_on: ['a'] },
        { name: 'f' },
        { name: 'c', depends_on: ['a', 'b', 'f'], dep_policy: 'any', kwargs: { cmd: 'echo c', env: { X: '1' } } },
      ]),
    );
    h.activate();
    h.fail('f');
    h.succeed('a', '{"go":false}');
    const dispatch = h.last?.effects.find((e): e is DispatchEffect => e.type === 'dispatch');
    expect(dispatch!.message).toMatchObject({ kwargs: { cmd: 'echo c', env: { X: '1' } }, workflowId: 'wf1', taskName: 'c', attemptNo: 1 });
    expect(upstreamOf(dispatch!)).toEqual({ i: { a: '{"go":false}' }, n: ['b'] });
  });

  it('fits a 3 000-parent fan-in of blob outputs in one 64 KiB Storage Queue message', () => {
    const parents = Array.from({ length: 3000 }, (_, i) => ({ name: `shard-${String(i).padStart(5, '0')}` }));
    const h = new Harness(definition([...parents, { name: 'reduce', depends_on: parents.map((p) => p.name) }]), 'myprefix-outputs');
    h.activate();
    const completions = parents.map((p) => ({
      type: 'completion' as const,
      now: at(10),
      taskName: p.name,
      attemptNo: 1,
      success: true,
      outputRef: `blob:myprefix-outputs/outputs/wf1/${p.name}/1.json:1B2M2Y8AsgTpgAmY7PhCfg==`,
      error: null,
    }));
    const folded = foldEvents(h.runtime, completions);
    const dispatch = folded.effects.flat().find((e): e is DispatchEffect => e.type === 'dispatch');
    expect(dispatch?.taskName).toBe('reduce');
    expect(new TextEncoder().encode(encodeTaskMessage(dispatch!.message)).length).toBeLessThan(65_536);
    expect(upstreamOf(dispatch!)?.s).toEqual({ '1': parents.map((p) => p.name) });
  });
});

describe('foldEvents', () => {
  it('gives the same runtime and effects as one reduce call per event, without touching its input', () => {
    const def = definition([
      { name: 'a', num_retries: 1 },
      { name: 'b', depends_on: ['a'] },
      { name: 'c', depends_on: ['a'], condition: 'inputs.a.go' },
      { name: 'd', depends_on: ['b', 'c'], dep_policy: 'any' },
    ]);
    const events = [
      { type: 'activate', now: at(1) },
      { type: 'completion', now: at(2), taskName: 'a', attemptNo: 1, success: false, outputRef: null, error: 'x' },
      { type: 'completion', now: at(3), taskName: 'a', attemptNo: 1, success: false, outputRef: null, error: 'dup' },
      { type: 'completion', now: at(4), taskName: 'a', attemptNo: 2, success: true, outputRef: '{"go":false}', error: null },
      { type: 'timeout-sweep', now: at(5) },
      { type: 'completion', now: at(6), taskName: 'b', attemptNo: 1, success: true, outputRef: null, error: null },
      { type: 'completion', now: at(7), taskName: 'd', attemptNo: 1, success: true, outputRef: null, error: null },
    ] as const;
    const start = createRuntime(def, { workflowId: 'wf1', now: at(0) });
    const snapshot = JSON.stringify(start);
    let sequential = start;
    const sequentialEffects = events.map((e) => {
      const r = reduce(sequential, e);
      sequential = r.runtime;
      return r.effects;
    });
    const folded = foldEvents(start, events);
    expect(folded.runtime).toEqual(sequential);
    expect(folded.effects).toEqual(sequentialEffects);
    expect(folded.runtime.status).toBe('completed');
    expect(JSON.stringify(start)).toBe(snapshot);
  });

  it('returns the same object when nothing changed', () => {
    const rt = createRuntime(diamond, { workflowId: 'wf1', now: at(0) });
    const folded = foldEvents(rt, [{ type: 'timeout-sweep', now: at(1) }]);
    expect(folded.runtime).toBe(rt);
    expect(folded.effects).toEqual([[{ type: 'ignored', reason: 'no task is running' }]]);
  });
});

it('leaves its input untouched (one example; properties check it broadly)', () => {
  const rt = createRuntime(diamond, { workflowId: 'wf1', now: at(0) });
  const snapshot = JSON.stringify(rt);
  reduce(rt, { type: 'activate', now: at(1) });
  expect(JSON.stringify(rt)).toBe(snapshot);
});
