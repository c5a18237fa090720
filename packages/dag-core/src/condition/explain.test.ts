// Skip reasons in words (docs/conditions.md): which references and comparisons decided, with
// their values; missing fields with the fields present; one bounded line.
import { describe, expect, it } from '@jest/globals';
import {
  compileCondition,
  conditionSkipReason,
  evaluateCondition,
  MAX_SKIP_REASON_LENGTH,
  skipReasonKind,
  type ConditionEvaluation,
} from './index';

function evaluation(
  expression: string,
  dependsOn: readonly string[],
  inputs: Record<string, unknown>,
  parentStatus: Record<string, string> = {},
): ConditionEvaluation {
  const compiled = compileCondition(expression, dependsOn);
  if (!compiled.ok) throw new Error(`${expression}: ${compiled.issues[0]?.message}`);
  return evaluateCondition(compiled.value, inputs, { parentStatus });
}

function reason(
  expression: string,
  dependsOn: readonly string[],
  inputs: Record<string, unknown>,
  parentStatus: Record<string, string> = {},
): string | null {
  return conditionSkipReason(evaluation(expression, dependsOn, inputs, parentStatus));
}

const TRAINERS = ['train-gpu', 'train-cpu'];
const HEADLINE = 'any(inputs["train-*"].accuracy > 0.9)';

describe('skip reasons', () => {
  it('name each deciding reference with its value, and why a null is null', () => {
    expect(
      reason(
        HEADLINE,
        TRAINERS,
        { 'train-gpu': null, 'train-cpu': { accuracy: 0.85 } },
        { 'train-gpu': 'failed', 'train-cpu': 'completed' },
      ),
    ).toBe('condition false: inputs["train-cpu"].accuracy = 0.85, not > 0.9; inputs["train-gpu"].accuracy is null (train-gpu failed)');
    // One trainer failed, the other reached the bar: the task runs, no reason.
    expect(
      reason(
        HEADLINE,
        TRAINERS,
        { 'train-gpu': null, 'train-cpu': { accuracy: 0.95 } },
        { 'train-gpu': 'failed', 'train-cpu': 'completed' },
      ),
    ).toBeNull();
  });

  it.each([
    ['upstream_failed', 'x is upstream_failed'],
    ['cancelled', 'x was cancelled'],
    ['skipped', 'x was skipped'],
    ['running', 'x has not finished'],
  ])('say why a parent that is %s reads null', (status, words) => {
    expect(reason('inputs.x.v > 1', ['x'], { x: null }, { x: status })).toBe(`condition false: inputs.x.v is null (${words})`);
  });

  it("say a field is missing from a completed parent's output and list the fields it has", () => {
    const missing = evaluation('inputs.a.acc > 0.9', ['a'], { a: { accuracy: 0.95, loss: 0.1 } }, { a: 'completed' });
    expect(missing).toMatchObject({ ok: true, value: false, truth: 'unknown', missingField: true });
    expect(conditionSkipReason(missing)).toBe('condition false: output of "a" has no field "acc"; it has: accuracy, loss');
    // Also when the comparison is plain == (null == 1 is false).
    expect(reason('inputs.a.acc == 1', ['a'], { a: { accuracy: 0.95 } })).toBe(
      'condition false: output of "a" has no field "acc"; it has: accuracy',
    );
    expect(reason('inputs.a.metrics.acc > 1', ['a'], { a: { metrics: { f1: 1, loss: 2 } } })).toBe(
      'condition false: inputs.a.metrics has no field "acc"; it has: f1, loss',
    );
    expect(reason('inputs.a.acc > 1', ['a'], { a: 3 })).toBe('condition false: output of "a" has no field "acc"; it is 3');
    expect(reason('inputs.a.acc > 1', ['a'], { a: {} })).toBe('condition false: output of "a" has no field "acc"; it has no fields');
    expect(reason('inputs.a.acc > 1', ['a'], { a: null }, { a: 'completed' })).toBe(
      'condition false: output of "a" has no field "acc"; a completed without an output',
    );
  });

  it('tell a null in the output and an index out of range from a missing field', () => {
    const explicit = evaluation('inputs.a.acc > 1', ['a'], { a: { acc: null } }, { a: 'completed' });
    expect(explicit).toMatchObject({ truth: 'unknown', missingField: false });
    expect(conditionSkipReason(explicit)).toBe('condition false: inputs.a.acc is null');
    expect(reason('inputs.a.m.acc > 1', ['a'], { a: { m: null } })).toBe('condition false: inputs.a.m.acc is null (inputs.a.m is null)');
    expect(reason('inputs.a.l[5] > 1', ['a'], { a: { l: [1, 2] } })).toBe(
      'condition false: inputs.a.l[5] is null (inputs.a.l has 2 items)',
    );
  });

  it('explain false comparisons, bare values and aggregates', () => {
    expect(reason('not inputs.test.passed', ['test'], { test: { passed: true } })).toBe('condition false: inputs.test.passed = true');
    expect(reason('inputs.test.passed and inputs.test.coverage >= 0.9', ['test'], { test: { passed: true, coverage: 0.5 } })).toBe(
      'condition false: inputs.test.coverage = 0.5, not >= 0.9',
    );
    expect(reason('count(inputs["t-*"].ok) >= 2', ['t-a', 't-b'], { 't-a': { ok: true }, 't-b': { ok: false } })).toBe(
      'condition false: count(inputs["t-*"].ok) = 1, not >= 2',
    );
    expect(reason('inputs.a.x > inputs.b.y', ['a', 'b'], { a: { x: 1 }, b: { y: 2 } })).toBe(
      'condition false: inputs.a.x = 1, not > inputs.b.y (= 2)',
    );
    expect(reason('all(inputs["t-*"].ok)', ['t-a', 't-b'], { 't-a': { ok: true }, 't-b': { ok: false } })).toBe(
      'condition false: inputs["t-b"].ok = false',
    );
    expect(reason('not (inputs.a.x > 1)', ['a'], { a: { x: 3 } })).toBe('condition false: inputs.a.x = 3, > 1');
  });

  it('mention a repeated fact once, and count the facts not shown', () => {
    expect(reason('inputs.a.acc > 0.9 or inputs.a.acc < 0.1', ['a'], { a: { accuracy: 1 } })).toBe(
      'condition false: output of "a" has no field "acc"; it has: accuracy',
    );
    const many = Array.from({ length: 20 }, (_, i) => `t${i}`);
    const text = reason('all(inputs.*.ok)', many, {}) ?? '';
    expect(text.startsWith('condition false: inputs.t0.ok is null (no output of t0); inputs.t1.ok is null')).toBe(true);
    expect(text.endsWith('; and 15 more')).toBe(true);
  });

  it('stay one line and bounded, however long or strange the values', () => {
    const long = 'x'.repeat(10_000);
    const weird = { [`key\nwith "quotes"`]: 1, ['k'.repeat(500)]: 2 };
    const text = reason('inputs.a.s == "x" and inputs.a.missing > 1', ['a'], { a: { s: `${long}\n`, ...weird } }) ?? '';
    expect(text).not.toMatch(/[\r\n]/);
    expect(text.length).toBeLessThanOrEqual(MAX_SKIP_REASON_LENGTH);
    expect(text).toContain('…');
    const deps = Array.from({ length: 50 }, (_, i) => `a-very-long-task-name-for-the-bound-${'n'.repeat(100)}-${i}`);
    const wide = reason('any(inputs.*.value > 1)', deps, {}) ?? '';
    expect(wide.length).toBeLessThanOrEqual(MAX_SKIP_REASON_LENGTH);
    expect(wide.endsWith('…')).toBe(true);
    // A huge output costs only what is shown.
    const big = { rows: Array.from({ length: 200_000 }, (_, i) => i) };
    expect(reason('inputs.a.rows == []', ['a'], { a: big })).toMatch(/^condition false: inputs\.a\.rows = \[0, 1, 2, .*…, not == \[\]$/);
  });

  it('say condition error with the message for a type error', () => {
    expect(reason('inputs.a.s > 1', ['a'], { a: { s: 'x' } })).toBe('condition error: cannot compare str and int with > (column 12)');
  });
});

describe('skipReasonKind', () => {
  it.each([
    ['condition false', 'condition-false'],
    ['condition false: inputs.a.x = 1, not > 2', 'condition-false'],
    ['condition false: inputs.a.x = "has no field ", not > 2', 'condition-false'],
    ['condition false: output of "a" has no field "acc"; it has: accuracy, loss', 'missing-field'],
    ['condition false: inputs.b.x = 1, not > 2; inputs.a.m has no field "acc"; it is 3', 'missing-field'],
    ['condition error: cannot compare str and int with > (column 12)', 'error'],
    ['could not read the output of "a": md5 mismatch', 'error'],
    ['the output of "a" is not JSON: Unexpected token', 'error'],
  ] as const)('%s → %s', (text, kind) => {
    expect(skipReasonKind(text)).toBe(kind);
  });

  it('classifies what the evaluator writes', () => {
    expect(skipReasonKind(reason('inputs.a.acc > 0.9', ['a'], { a: { accuracy: 0.95 } }))).toBe('missing-field');
    expect(skipReasonKind(reason('inputs.a.accuracy > 0.99', ['a'], { a: { accuracy: 0.95 } }))).toBe('condition-false');
    expect(skipReasonKind(reason('inputs.a.accuracy > "x"', ['a'], { a: { accuracy: 0.95 } }))).toBe('error');
    // A string value holding the words is printed with its quotes escaped.
    expect(skipReasonKind(reason('inputs.a.s == "y"', ['a'], { a: { s: 'x has no field "acc"' } }))).toBe('condition-false');
  });
});
