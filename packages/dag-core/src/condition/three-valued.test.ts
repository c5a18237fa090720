// Truth tables of the three-valued rules (docs/conditions.md): every operator with null operands
// and with unknown operands, Kleene's and/or/not, and the aggregates over true, false and unknown
// elements.
import { describe, expect, it } from '@jest/globals';
import { compileCondition, evaluateCondition, type ConditionTruth } from './index';

const DEPENDS_ON = ['a', 'gone', 't-a', 't-b', 't-c'];
const A = { one: 1, none: null, s: 'abc', l: [1, 2, 3], obj: { k: 1 }, t: true };
/** `gone` is a parent that did not complete: its output reads as null. */
const INPUTS = { a: A, gone: null };

const T = 'inputs.a.one > 0';
const F = 'inputs.a.one > 5';
const U = 'inputs.a.none > 0';
const OPERANDS: Record<'T' | 'F' | 'U', string> = { T, F, U };
const TRUTH: Record<'T' | 'F' | 'U', ConditionTruth> = { T: true, F: false, U: 'unknown' };

type Outcome = ConditionTruth | 'error';

function outcome(expression: string, inputs: Record<string, unknown> = INPUTS): Outcome {
  // A condition must read an input: `X and inputs.a.t` (true) has the truth of X, in three values too.
  const source = /inputs/.test(expression) ? expression : `(${expression}) and inputs.a.t`;
  const compiled = compileCondition(source, DEPENDS_ON);
  if (!compiled.ok) throw new Error(`${expression}: ${compiled.issues[0]?.message}`);
  const result = evaluateCondition(compiled.value, { a: A, ...inputs });
  if (!result.ok) return 'error';
  // The task runs exactly when the condition is true; unknown skips it like false.
  expect(result.value).toBe(result.truth === true);
  return result.truth;
}

describe('not', () => {
  it.each([
    ['T', false],
    ['F', true],
    ['U', 'unknown'],
  ] as const)('not %s is %p', (operand, expected) => {
    expect(outcome(`not (${OPERANDS[operand]})`)).toBe(expected);
  });
});

describe('and / or (Kleene)', () => {
  const AND: Record<string, ConditionTruth> = {
    TT: true,
    TF: false,
    TU: 'unknown',
    FT: false,
    FF: false,
    FU: false,
    UT: 'unknown',
    UF: false,
    UU: 'unknown',
  };
  const OR: Record<string, ConditionTruth> = {
    TT: true,
    TF: true,
    TU: true,
    FT: true,
    FF: false,
    FU: 'unknown',
    UT: true,
    UF: 'unknown',
    UU: 'unknown',
  };
  it.each(Object.keys(AND))('%s', (pair) => {
    const [x, y] = [pair[0] as 'T' | 'F' | 'U', pair[1] as 'T' | 'F' | 'U'];
    expect(outcome(`(${OPERANDS[x]}) and (${OPERANDS[y]})`)).toBe(AND[pair]);
    expect(outcome(`(${OPERANDS[x]}) or (${OPERANDS[y]})`)).toBe(OR[pair]);
  });

  it('bare values keep Python truthiness: a null reference is false, not unknown', () => {
    expect(outcome('inputs.a.none')).toBe(false);
    expect(outcome('not inputs.a.none')).toBe(true);
    expect(outcome('not inputs.gone')).toBe(true);
    expect(outcome(`inputs.a.none or (${U})`)).toBe('unknown');
  });
});

describe('comparisons with a null operand', () => {
  // Each null: a null value in an output, a field missing from it, a parent that did not
  // complete, an index out of range, and the literal None.
  const NULLS = ['inputs.a.none', 'inputs.a.missing', 'inputs.gone.x', 'inputs.gone', 'inputs.a.l[7]', 'None'];

  it.each(['<', '<=', '>', '>='])('%s is unknown with a null on either side', (op) => {
    for (const n of NULLS) {
      expect([n, outcome(`${n} ${op} 1`)]).toEqual([n, 'unknown']);
      expect([n, outcome(`1 ${op} ${n}`)]).toEqual([n, 'unknown']);
      expect([n, outcome(`${n} ${op} inputs.a.none`)]).toEqual([n, 'unknown']);
      expect([n, outcome(`not (${n} ${op} 1)`)]).toEqual([n, 'unknown']);
    }
  });

  it.each(['in', 'not in'])('%s is unknown with a null item or a null container', (op) => {
    for (const n of NULLS) {
      for (const container of ['[1, None]', '"abc"', 'inputs.a.obj', 'inputs.a.l']) {
        expect([n, container, outcome(`${n} ${op} ${container}`)]).toEqual([n, container, 'unknown']);
      }
      for (const item of ['1', '"a"', 'inputs.a.s']) {
        expect([n, item, outcome(`${item} ${op} ${n}`)]).toEqual([n, item, 'unknown']);
      }
    }
  });

  it('a null element of a list container is a plain value: membership compares with ==', () => {
    expect(outcome('1 in [None, 1]')).toBe(true);
    expect(outcome('2 in [None, 1]')).toBe(false);
    expect(outcome('2 not in [inputs.a.none, 1]')).toBe(true);
  });

  it.each([
    ['inputs.a.none == None', true],
    ['inputs.a.none != None', false],
    ['inputs.a.missing == None', true],
    ['inputs.gone.x == None', true],
    ['inputs.gone == None', true],
    ['None == inputs.a.none', true],
    ['inputs.a.none == 0', false],
    ['inputs.a.none != 0', true],
    ['inputs.a.none == False', false],
    ['inputs.a.none == inputs.gone', true],
    ['[inputs.a.none] == [None]', true],
  ] as const)('== and != keep their plain meaning: %s is %p', (expression, expected) => {
    expect(outcome(expression)).toBe(expected);
  });

  it.each([
    ['"x" > 1', 'error'],
    ['inputs.a.s > 1', 'error'],
    ['inputs.a.l <= 1', 'error'],
    ['inputs.a.obj < inputs.a.obj', 'error'],
    ['1 in inputs.a.s', 'error'],
    ['"x" in inputs.a.one', 'error'],
    ['[1] in inputs.a.obj', 'error'],
    [`(${U}) or inputs.a.s > 1`, 'error'],
    [`not (inputs.a.s > 1 and ${U})`, 'error'],
  ] as const)('a type error between non-null values stays an error: %s', (expression, expected) => {
    expect(outcome(expression)).toBe(expected);
  });
});

describe('comparisons with an unknown operand', () => {
  it.each(['==', '!=', '<', '<=', '>', '>=', 'in', 'not in'])('(unknown) %s x is unknown', (op) => {
    const right = op === 'in' || op === 'not in' ? '[True, False]' : 'True';
    expect(outcome(`(${U}) ${op} ${right}`)).toBe('unknown');
    expect(outcome(`True ${op} (${U})`)).toBe('unknown');
  });

  it('a list holding an unknown is unknown', () => {
    expect(outcome(`[${U}, True] == [True, True]`)).toBe('unknown');
    expect(outcome(`[${U}]`)).toBe('unknown');
    expect(outcome(`[${T}, ${F}] == [True, False]`)).toBe(true);
  });
});

describe('aggregates over true (T), false (F) and unknown (U) elements', () => {
  /** t-a, t-b, t-c: x > 0 is true for 1, false for -1, unknown for null. */
  const VALUE: Record<string, unknown> = { T: 1, F: -1, U: null };
  const ROWS: Array<[string, ConditionTruth, ConditionTruth, number, ConditionTruth, ConditionTruth, ConditionTruth]> = [
    // elements, any, all, count, almost_all k=0, k=1, k=2
    ['TTT', true, true, 3, true, true, true],
    ['TTF', true, false, 2, false, true, true],
    ['TTU', true, 'unknown', 2, false, true, true],
    ['TFU', true, false, 1, false, false, true],
    ['TUU', true, 'unknown', 1, false, false, true],
    ['FFF', false, false, 0, false, false, false],
    ['FFU', 'unknown', false, 0, false, false, false],
    ['FUU', 'unknown', false, 0, false, false, false],
    ['UUU', 'unknown', 'unknown', 0, false, false, false],
  ];
  it.each(ROWS)('%s: any %p, all %p, count %p, almost_all(0, 1, 2) %p %p %p', (elements, any, all, count, k0, k1, k2) => {
    const inputs = Object.fromEntries(['t-a', 't-b', 't-c'].map((name, i) => [name, { x: VALUE[elements[i]!] }]));
    const element = 'inputs["t-*"].x > 0';
    expect(outcome(`any(${element})`, inputs)).toBe(any);
    expect(outcome(`all(${element})`, inputs)).toBe(all);
    expect(outcome(`count(${element}) == ${count}`, inputs)).toBe(true);
    expect(outcome(`almost_all(${element}, 0)`, inputs)).toBe(k0);
    expect(outcome(`almost_all(${element}, 1)`, inputs)).toBe(k1);
    expect(outcome(`almost_all(${element}, 2)`, inputs)).toBe(k2);
    // not follows the aggregate's truth.
    expect(outcome(`not any(${element})`, inputs)).toBe(any === 'unknown' ? 'unknown' : !any);
  });

  it('over no match: any false, all true, count 0, almost_all true', () => {
    expect(outcome('any(inputs["zz-*"].x > 0)')).toBe(false);
    expect(outcome('all(inputs["zz-*"].x > 0)')).toBe(true);
    expect(outcome('count(inputs["zz-*"].x > 0) == 0')).toBe(true);
    expect(outcome('almost_all(inputs["zz-*"].x > 0, 0)')).toBe(true);
  });

  it('a parent that did not complete is an unknown element of any()', () => {
    // The README example: one trainer failed, the other reached the bar.
    expect(outcome('any(inputs["t-*"].accuracy > 0.9)', { 't-a': null, 't-b': { accuracy: 0.95 } })).toBe(true);
    expect(outcome('any(inputs["t-*"].accuracy > 0.9)', { 't-a': null, 't-b': { accuracy: 0.85 } })).toBe('unknown');
    expect(outcome('all(inputs["t-*"].accuracy > 0.9)', { 't-a': null, 't-b': { accuracy: 0.95 }, 't-c': { accuracy: 0.95 } })).toBe(
      'unknown',
    );
  });

  it('an error in any element stays an error, whatever the others', () => {
    expect(outcome('any(inputs["t-*"].x > 0)', { 't-a': { x: 1 }, 't-b': { x: 'b' } })).toBe('error');
    expect(outcome('all(inputs["t-*"].x > 0)', { 't-a': { x: null }, 't-b': { x: [] } })).toBe('error');
  });
});

describe('truth of the whole condition', () => {
  it.each(Object.entries(TRUTH))('%s gives value %p only when true', (name, truth) => {
    const compiled = compileCondition(OPERANDS[name as 'T' | 'F' | 'U'], DEPENDS_ON);
    if (!compiled.ok) throw new Error('did not compile');
    expect(evaluateCondition(compiled.value, INPUTS)).toMatchObject({ ok: true, truth, value: truth === true });
  });
});
