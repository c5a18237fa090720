// Retry delays and the workflow deadline in the reducer: a delayed retry is sent at once with the
// queue's delivery delay, waits as `running` without a max_parallelism slot, is never declared lost
// before it is due, and is cancelled by a cancel while it waits; a workflow past its `timeout_s` is
// cancelled by the sweep with the reason.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { taskState, tasksIn } from './access';
import { encodeRuntime } from './codec';
import { createRuntime } from './create';
import { encodeDefinition, decodeDefinition } from './definition-codec';
import { deadlinePassed, foldEvents, reduce } from './reduce';
import { applyDeltaRecord, assembleParts, decodeLogRecords, decodeSnapshot, encodeDeltaRecord, encodeSnapshot } from './snapshot-codec';
import { Harness, at, decodedRuntime, definition } from './test-helpers/build';
import { epochMs } from './time';
import type { DispatchEffect, Effect, WorkflowEvent, WorkflowRuntime } from './types';

function dispatches(effects: readonly Effect[]): DispatchEffect[] {
  return effects.filter((e): e is DispatchEffect => e.type === 'dispatch');
}

const SWEEP = { type: 'timeout-sweep', messageTtlInMs: 1_000, graceInMs: 0 } as const;

describe('a retry with a delay', () => {
  const def = definition(
    [{ name: 'a', num_retries: 3, retry_delay_s: 10, retry_backoff: 3, retry_max_delay_s: 60 }, { name: 'b' }, { name: 'c' }],
    { max_parallelism: 1 },
  );

  it('is sent at once with its delay, and waits as running without holding a max_parallelism slot', () => {
    const h = new Harness(def);
    expect(h.activate().effects.map((e) => e.type === 'dispatch' && e.taskName)).toEqual(['a']);
    const failed = h.fail('a'); // at(2)
    expect(dispatches(failed.effects)).toEqual([
      expect.objectContaining({ taskName: 'a', attemptNo: 2, messageId: 'wf1/a/2', delayInMs: 10_000 }),
      // a waits: b takes the one slot at once.
      expect.objectContaining({ taskName: 'b', attemptNo: 1 }),
    ]);
    expect(dispatches(failed.effects)[1]).not.toHaveProperty('delayInMs');
    expect(taskState(h.runtime, 'a')).toMatchObject({
      status: 'running',
      attemptNo: 2,
      dispatchedAt: at(2),
      retryDueAt: at(12),
      error: 'exit code 1',
      startedAt: null,
    });
    expect(taskState(h.runtime, 'b')).toMatchObject({ status: 'running', retryDueAt: null });
    expect(h.runtime.counts).toMatchObject({ running: 2, ready: 1 });
    // b ends before a is due: c takes the slot, a still waiting.
    expect(h.succeed('b').effects.map((e) => e.type === 'dispatch' && e.taskName)).toEqual(['c']);
    // Once a is due it counts again: with a and c running, nothing more would be sent.
    h.advance(20);
    expect(h.activate().effects).toEqual([]);
  });

  it('waits min(retry_delay_s × retry_backoff^(k−2), retry_max_delay_s) before attempt k, and a workflow retry starts over', () => {
    const h = new Harness(definition([{ name: 'a', num_retries: 3, retry_delay_s: 10, retry_backoff: 3, retry_max_delay_s: 60 }]));
    h.activate();
    const delays: Array<number | undefined> = [];
    for (let i = 0; i < 4; i++) {
      h.advance(100);
      delays.push(dispatches(h.fail('a').effects)[0]?.delayInMs);
    }
    expect(delays).toEqual([10_000, 30_000, 60_000, undefined]);
    expect(taskState(h.runtime, 'a')).toMatchObject({ status: 'failed', attemptNo: 4 });
    // The retry's first attempt goes out at once; its own retry waits retry_delay_s again.
    expect(dispatches(h.send({ type: 'retry' }).effects)).toEqual([expect.not.objectContaining({ delayInMs: expect.anything() })]);
    expect(taskState(h.runtime, 'a')).toMatchObject({ attemptNo: 5, retryDueAt: null });
    expect(dispatches(h.fail('a').effects)[0]).toMatchObject({ attemptNo: 6, delayInMs: 10_000 });
  });

  it('is never declared lost while it waits: the sweep counts from its due time', () => {
    const h = new Harness(definition([{ name: 'a', num_retries: 1, retry_delay_s: 100, timeout_s: 5 }]));
    h.activate();
    h.fail('a'); // at(2), due at(102)
    // From the dispatch the bound (1 s + 5 s + 0) has long passed; from the due time it has not.
    h.advance(50);
    expect(h.send(SWEEP).effects).toEqual([{ type: 'ignored', reason: 'no running task is overdue' }]);
    h.advance(52); // at(105)
    expect(h.send(SWEEP).effects).toEqual([{ type: 'ignored', reason: 'no running task is overdue' }]);
    h.advance(3); // at(109): 7 s past due
    h.send(SWEEP);
    expect(taskState(h.runtime, 'a')).toMatchObject({ status: 'failed', error: expect.stringContaining('of its due time') });
  });

  it('is cancelled by a cancel while it waits; a due one is left to its worker', () => {
    const h = new Harness(
      definition([
        { name: 'a', num_retries: 1, retry_delay_s: 100 },
        { name: 'b', num_retries: 1, retry_delay_s: 5 },
      ]),
    );
    h.activate();
    h.fail('a'); // due at(102)
    h.fail('b'); // due at(8)
    h.advance(10);
    h.send({ type: 'cancel' });
    expect(taskState(h.runtime, 'a')).toMatchObject({ status: 'cancelled', error: 'workflow cancelled' });
    expect(taskState(h.runtime, 'b')).toMatchObject({ status: 'running' });
    expect(h.runtime.status).toBe('cancelling');
    // The worker that later takes a's message sees the cancel; its report changes nothing.
    expect(h.fail('a', 'workflow cancelled', 2).effects).toEqual([expect.objectContaining({ type: 'ignored' })]);
  });

  it('goes out at once without a delay, and a re-arm after a lifted cancel never waits', () => {
    const h = new Harness(
      definition([
        { name: 'a', num_retries: 1 },
        { name: 'b', num_retries: 1, retry_delay_s: 30 },
      ]),
    );
    h.activate();
    expect(dispatches(h.fail('a').effects)).toEqual([expect.not.objectContaining({ delayInMs: expect.anything() })]);
    h.send({ type: 'cancel' });
    h.send({ type: 'retry' });
    // b's worker reports the stop the cancel caused: re-armed without spending its budget, at once.
    const rearmed = h.send({
      type: 'completion',
      taskName: 'b',
      attemptNo: 1,
      success: false,
      outputRef: null,
      error: 'stopped: workflow cancelled',
      cancelled: true,
    });
    expect(dispatches(rearmed.effects)).toEqual([expect.objectContaining({ taskName: 'b', attemptNo: 2 })]);
    expect(dispatches(rearmed.effects)[0]).not.toHaveProperty('delayInMs');
  });

  it('keeps its due time through every stored form, and older records without it still read', () => {
    const h = new Harness(definition([{ name: 'a', num_retries: 1, retry_delay_s: 10 }, { name: 'b' }]));
    h.activate();
    const before = h.runtime;
    h.fail('a');
    const rt = h.runtime;
    expect(taskState(decodedRuntime(encodeRuntime(rt)), 'a')!.retryDueAt).toBe(at(12));
    const meta = { definitionHash: 'a'.repeat(64), generation: 1 };
    const snapshot = encodeSnapshot(rt, meta);
    expect(snapshot).toContain('"retry_due_at":"2026-01-01T00:00:12.000Z"');
    const parts = decodeSnapshot(snapshot, rt.definition, { workflowId: 'wf1', ...meta });
    expect(assembleParts(parts).tasks).toEqual(rt.tasks);
    const fromLog = decodeSnapshot(encodeSnapshot(before, meta), rt.definition, { workflowId: 'wf1', ...meta });
    for (const record of decodeLogRecords(encodeDeltaRecord(1, before, rt, ['a']), rt.definition))
      if (record.kind === 'delta') applyDeltaRecord(fromLog, record);
    expect(assembleParts(fromLog).tasks).toEqual(rt.tasks);
    // A snapshot written before the field existed: no key at all.
    expect(encodeSnapshot(before, meta)).not.toContain('retry_due_at');
    expect(encodeSnapshot(before, meta)).not.toContain('deadline_at');
    expect(
      taskState(assembleParts(decodeSnapshot(encodeSnapshot(before, meta), rt.definition, { workflowId: 'wf1', ...meta })), 'a')!
        .retryDueAt,
    ).toBeNull();
  });
});

describe('the workflow deadline (timeout_s)', () => {
  const def = definition([{ name: 'a' }, { name: 'b', depends_on: ['a'] }, { name: 'c' }], { timeout_s: 60 });

  it('starts at the first activation and cancels the workflow once the sweep finds it passed, with the reason', () => {
    const h = new Harness(def);
    expect(h.runtime.deadlineAt).toBeNull();
    h.activate(); // at(1)
    expect(h.runtime.deadlineAt).toBe(at(61));
    h.activate();
    expect(h.runtime.deadlineAt).toBe(at(61));
    h.succeed('c'); // at(3)
    h.advance(56); // the next event is at(60)
    expect(deadlinePassed(h.runtime, at(60))).toBe(false);
    expect(h.send(SWEEP).effects).toEqual([{ type: 'ignored', reason: 'no running task is overdue' }]);
    expect(deadlinePassed(h.runtime, at(61))).toBe(true);
    const swept = h.send(SWEEP); // at(61)
    const reason = `deadline passed: the workflow's timeout_s (60 s) ran out at ${at(61)}`;
    expect(swept.runtime).toMatchObject({ status: 'cancelling', cancelRequested: true, cancelReason: reason, cancelAppliedAt: at(61) });
    expect(taskState(h.runtime, 'b')).toMatchObject({ status: 'cancelled', error: `workflow cancelled: ${reason}` });
    expect(deadlinePassed(h.runtime, at(100))).toBe(false);
    // a's worker is stopped by the cancel and reports it.
    h.send({
      type: 'completion',
      taskName: 'a',
      attemptNo: 1,
      success: false,
      outputRef: null,
      error: 'stopped: workflow cancelled',
      cancelled: true,
    });
    expect(h.runtime).toMatchObject({ status: 'cancelled', cancelReason: reason });
    expect(decodedRuntime(encodeRuntime(h.runtime))).toMatchObject({ deadlineAt: at(61), cancelReason: reason });
  });

  it('cancels a workflow with nothing running too, and a retry lifts it with a fresh deadline', () => {
    const h = new Harness(definition([{ name: 'a' }, { name: 'b', depends_on: ['a'], condition: 'inputs.a.ok' }], { timeout_s: 30 }));
    h.activate();
    // b waits for a blob output to be read: nothing is running.
    h.succeed('a', 'blob:test-outputs/outputs/wf1/a/1.json:AAAAAAAAAAAAAAAAAAAAAA==');
    expect(h.runtime.counts.running).toBe(0);
    h.advance(40);
    h.send(SWEEP);
    expect(h.runtime).toMatchObject({ status: 'cancelled', cancelReason: expect.stringMatching(/^deadline passed/) });
    h.advance(5);
    h.send({ type: 'retry' }); // at(49)
    expect(h.runtime).toMatchObject({ cancelRequested: false, cancelReason: null, deadlineAt: at(79) });
  });

  it('is none without timeout_s, and a user cancel carries no reason', () => {
    const h = new Harness(definition([{ name: 'a' }]));
    h.activate();
    h.advance(1_000_000);
    expect(h.runtime.deadlineAt).toBeNull();
    expect(deadlinePassed(h.runtime, at(2_000_000))).toBe(false);
    h.send({ type: 'cancel' });
    expect(h.runtime).toMatchObject({ cancelRequested: true, cancelReason: null });
    expect(encodeDefinition(h.runtime.definition)).not.toContain('timeout_s":6');
    expect(decodeDefinition(encodeDefinition(def)).timeoutS).toBe(60);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

interface Spec {
  tasks: Array<{ retries: number; delay: number; backoff: number; max: number | null }>;
  maxParallelism: number | null;
  /** Per step: seconds to wait, which deliverable task to complete, and whether it succeeds (or a sweep). */
  steps: Array<{ wait: number; pick: number; outcome: 'ok' | 'fail' | 'sweep' }>;
}

const specArb: fc.Arbitrary<Spec> = fc.record({
  tasks: fc.array(
    fc.record({
      retries: fc.nat({ max: 4 }),
      delay: fc.nat({ max: 30 }),
      backoff: fc.constantFrom(1, 1.5, 2, 3),
      max: fc.option(fc.nat({ max: 90 }), { nil: null }),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  maxParallelism: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
  steps: fc.array(
    fc.record({
      wait: fc.nat({ max: 40 }),
      pick: fc.nat(),
      outcome: fc.constantFrom<'ok' | 'fail' | 'sweep'>('ok', 'fail', 'fail', 'sweep'),
    }),
    { maxLength: 60 },
  ),
});

/** Running tasks whose delay has not ended at `now`. */
function waiting(rt: WorkflowRuntime, now: string): number {
  let n = 0;
  for (const [, t] of tasksIn(rt)) if (t.status === 'running' && t.retryDueAt !== null && epochMs(t.retryDueAt) > epochMs(now)) n++;
  return n;
}

describe('retry delay properties', () => {
  it('due times never decrease across attempts (backoff ≥ 1), and a waiting retry never counts against max_parallelism', () => {
    fc.assert(
      fc.property(specArb, fc.boolean(), (spec, batched) => {
        const def = definition(
          spec.tasks.map((t, i) => ({
            name: `t${i}`,
            num_retries: t.retries,
            retry_delay_s: t.delay,
            retry_backoff: t.backoff,
            retry_max_delay_s: t.max,
          })),
          { max_parallelism: spec.maxParallelism, timeout_s: 600 },
        );
        let rt = createRuntime(def, { workflowId: 'wf1', now: at(0), outputsContainer: null });
        let clock = 0;
        const delays = new Map<string, number[]>();
        const dueTimes = new Map<string, number[]>();
        const apply = (event: WorkflowEvent) => {
          const result = batched
            ? foldEvents(rt, [event])
            : (({ runtime, effects }) => ({ runtime, effects: [effects] }))(reduce(rt, event));
          rt = result.runtime;
          for (const d of dispatches(result.effects.flat())) {
            if (d.attemptNo === 1) continue;
            delays.set(d.taskName, [...(delays.get(d.taskName) ?? []), d.delayInMs ?? 0]);
            dueTimes.set(d.taskName, [...(dueTimes.get(d.taskName) ?? []), epochMs(event.now) + (d.delayInMs ?? 0)]);
          }
          // After every step a ready task is held back only by tasks that run (or may be delivered):
          // retries waiting for their delay take no slot.
          if (rt.activated && !rt.cancelRequested && rt.counts.ready > 0) {
            expect(spec.maxParallelism).not.toBeNull();
            expect(rt.counts.running - waiting(rt, event.now)).toBeGreaterThanOrEqual(spec.maxParallelism!);
          }
        };
        apply({ type: 'activate', now: at(clock) });
        for (const step of spec.steps) {
          clock += 1 + step.wait;
          const now = at(clock);
          // Only a delivered attempt can complete: running, and due.
          const deliverable = [...tasksIn(rt)].filter(
            ([, t]) => t.status === 'running' && (t.retryDueAt === null || epochMs(t.retryDueAt) <= clock * 1000 + epochMs(at(0))),
          );
          const [name, t] = deliverable[step.pick % Math.max(1, deliverable.length)] ?? [];
          if (step.outcome === 'sweep') apply({ ...SWEEP, now });
          else if (name === undefined || t === undefined) apply({ type: 'activate', now });
          else
            apply({
              type: 'completion',
              now,
              taskName: name,
              attemptNo: t.attemptNo,
              success: step.outcome === 'ok',
              outputRef: null,
              error: step.outcome === 'ok' ? null : 'exit code 1',
            });
        }
        for (const [name, list] of delays) {
          // The budget never starts over here (no workflow retry): each delay is at least the one before,
          // and each retry is due after the one before.
          for (let i = 1; i < list.length; i++) expect([name, list[i]! >= list[i - 1]!]).toEqual([name, true]);
          const due = dueTimes.get(name)!;
          for (let i = 1; i < due.length; i++) expect([name, due[i]! > due[i - 1]!]).toEqual([name, true]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
