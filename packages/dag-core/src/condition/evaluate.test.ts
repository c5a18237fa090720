import { describe, expect, it } from '@jest/globals';
import { compileCondition, evaluateCondition, type CompiledCondition, type ConditionEvaluation } from './index';

const DEPENDS_ON = ['a', 'b', 't-a', 't-b', 't-c', 'prep/x', 'prep/y', 'eval.v1', 'other'];

const A = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  half: 0.5,
  small: 0.001,
  neg: -2.5,
  t: true,
  f: false,
  none: null,
  s: 'abc',
  empty: '',
  emoji: 'a😀b',
  l: [1, 2, 3],
  nested: [1, [2, { k: [true, 'x'] }]],
  obj: { p: { q: { r: [{ s: 'deep' }] } } },
  in: 'keyword field',
  quote: 'it\'s "quoted"\n',
};

function compile(expression: string, dependsOn: readonly string[] = DEPENDS_ON): CompiledCondition {
  const result = compileCondition(expression, dependsOn);
  if (!result.ok) throw new Error(`${expression}: ${JSON.stringify(result.issues)}`);
  return result.value;
}

function run(expression: string, inputs: Record<string, unknown> = { a: A }, dependsOn = DEPENDS_ON): ConditionEvaluation {
  return evaluateCondition(compile(expression, dependsOn), inputs);
}

function value(expression: string, inputs: Record<string, unknown> = { a: A }, dependsOn = DEPENDS_ON): boolean {
  const result = run(expression, inputs, dependsOn);
  if (!result.ok) throw new Error(`${expression}: unexpected error ${result.error}`);
  return result.value;
}

function truth(expression: string, inputs: Record<string, unknown> = { a: A }, dependsOn = DEPENDS_ON): boolean | 'unknown' {
  const result = run(expression, inputs, dependsOn);
  if (!result.ok) throw new Error(`${expression}: unexpected error ${result.error}`);
  return result.truth;
}

function errorOf(expression: string, inputs: Record<string, unknown> = { a: A }, dependsOn = DEPENDS_ON): string {
  const result = run(expression, inputs, dependsOn);
  if (result.ok) throw new Error(`${expression}: expected an error, got ${result.value}`);
  return result.error;
}

describe('literals', () => {
  it.each([
    ['inputs.a.one == 1', true],
    ['inputs.a.two == 1', false],
    ['inputs.a.half == 0.5', true],
    ['inputs.a.half == .5', true],
    ['inputs.a.two == 2.', true],
    ['inputs.a.one == 1e0', true],
    ['inputs.a.small == 1e-3', true],
    ['inputs.a.one > 1e-3', true],
    ['inputs.a.one > -1', true],
    ['inputs.a.zero > -2.5', true],
    ['inputs.a.neg == -2.5', true],
    ['inputs.a.neg == - 2.5', true],
    ['-1 < inputs.a.zero', true],
    ['inputs.a.l[0] == -1', false],
    ['inputs.a.s == "abc"', true],
    ["inputs.a.s == 'abc'", true],
    ['inputs.a.quote == "it\'s \\"quoted\\"\\n"', true],
    ["inputs.a.quote == 'it\\'s \"quoted\"\\x0a'", true],
    ['inputs.a.t == True', true],
    ['inputs.a.t == true', true],
    ['inputs.a.f == False', true],
    ['inputs.a.f == false', true],
    ['inputs.a.none == None', true],
    ['inputs.a.none == null', true],
    ['inputs.a.l == [1, 2, 3]', true],
    ['inputs.a.l == [1, 2, 3,]', true],
    ['inputs.a.l == [1, 2]', false],
    ['inputs.a.l == (1, 2, 3)', true],
    ['inputs.a.l[0] in (1,)', true],
    ['inputs.a.l == (1)', false],
    ['inputs.a.nested[1][0] == (2)', true],
    ['[inputs.a.one, [inputs.a.two]] == [1, [2]]', true],
    ['(inputs.a.one, inputs.a.two) == [1, 2]', true],
  ])('%s is %p', (expression, expected) => {
    expect(value(expression)).toBe(expected);
  });

  it('compares against an empty tuple and an empty list', () => {
    expect(value('inputs.a.emptyList == ()', { a: { emptyList: [] } })).toBe(true);
    expect(value('inputs.a.emptyList == []', { a: { emptyList: [] } })).toBe(true);
    expect(value('inputs.a.l == ()')).toBe(false);
  });
});

describe('operators', () => {
  it.each([
    ['inputs.a.t and inputs.a.t', true],
    ['inputs.a.t and inputs.a.f', false],
    ['inputs.a.f or inputs.a.t', true],
    ['inputs.a.f or inputs.a.f', false],
    ['not inputs.a.f', true],
    ['not inputs.a.s', false],
    ['not not inputs.a.s', true],
    ['inputs.a.one == 1', true],
    ['inputs.a.one != 1', false],
    ['inputs.a.one != 2', true],
    ['inputs.a.one < 2', true],
    ['inputs.a.one < 1', false],
    ['inputs.a.one <= 1', true],
    ['inputs.a.one <= 0', false],
    ['inputs.a.one > 0', true],
    ['inputs.a.one > 1', false],
    ['inputs.a.one >= 1', true],
    ['inputs.a.one >= 2', false],
    ['"b" in inputs.a.s', true],
    ['"z" in inputs.a.s', false],
    ['"z" not in inputs.a.s', true],
    ['2 in inputs.a.l', true],
    ['2 not in inputs.a.l', false],
    ['(inputs.a.f or inputs.a.t) and inputs.a.t', true],
  ])('%s is %p', (expression, expected) => {
    expect(value(expression)).toBe(expected);
  });

  it('uses Python precedence: or < and < not < comparisons', () => {
    // (f and f) or t; `and` binding looser than `or` would give false.
    expect(value('inputs.a.f and inputs.a.f or inputs.a.t')).toBe(true);
    // (not f) and f; `not` binding looser than `and` would give true.
    expect(value('not inputs.a.f and inputs.a.f')).toBe(false);
    // not (1 < 2); `not` binding tighter than `<` would give (False < 2) == True.
    expect(value('not inputs.a.one < 2')).toBe(false);
    expect(value('not (inputs.a.f and inputs.a.f)')).toBe(true);
  });

  it('returns booleans from and/or (not the operand, unlike Python)', () => {
    expect(value('(inputs.a.zero or 5) == True')).toBe(true);
    expect(value('(inputs.a.s and 5) == 1')).toBe(true);
    expect(value('(not inputs.a.zero) == 1')).toBe(true);
  });

  it('short-circuits and/or: an error after the deciding operand is never reached', () => {
    expect(run('False and (inputs.a.s > 1)')).toMatchObject({ ok: true, value: false, truth: false });
    expect(run('True or (inputs.a.s > 1)')).toMatchObject({ ok: true, value: true, truth: true });
    expect(run('inputs.a.f and inputs.a.s > 1')).toMatchObject({ ok: true, value: false });
    expect(run('(inputs.a.s > 1) and False')).toMatchObject({ ok: false });
    expect(run('False or (inputs.a.s > 1)')).toMatchObject({ ok: false });
  });

  it('does not stop at an unknown operand: what follows can still decide, or fail', () => {
    expect(truth('(inputs.a.none > 0) and False')).toBe(false);
    expect(truth('(inputs.a.none > 0) or True')).toBe(true);
    expect(truth('False or (inputs.a.none > 0)')).toBe('unknown');
    expect(run('(inputs.a.none > 0) and (inputs.a.s > 1)')).toMatchObject({ ok: false });
    expect(run('(inputs.a.none > 0) or (inputs.a.s > 1)')).toMatchObject({ ok: false });
  });

  it('chains comparisons', () => {
    expect(value('0 < inputs.a.one <= 1')).toBe(true);
    expect(value('0 < inputs.a.two <= 1')).toBe(false);
    expect(value('1 < inputs.a.two < 3')).toBe(true);
    expect(value('inputs.a.three > 2 > 2')).toBe(false);
    expect(value('inputs.a.three > 2 >= 2')).toBe(true);
    expect(value('1 == inputs.a.one in [1] != 2')).toBe(true);
    expect(value('inputs.a.one < inputs.a.two < inputs.a.three < 4')).toBe(true);
  });

  it('stops a comparison chain at the first false link, like Python', () => {
    expect(run('inputs.a.one > 5 > inputs.a.s')).toMatchObject({ ok: true, value: false });
    expect(run('inputs.a.one < 5 > inputs.a.s')).toMatchObject({ ok: false });
  });

  it('is unknown for a chain with an unknown link and no false one', () => {
    expect(truth('inputs.a.one < 5 > inputs.a.none')).toBe('unknown');
    expect(truth('inputs.a.none < 5 > 10')).toBe(false);
    expect(truth('inputs.a.none < 5 < 10')).toBe('unknown');
    expect(run('inputs.a.none < 5 < inputs.a.s')).toMatchObject({ ok: false });
  });
});

describe('references', () => {
  it.each([
    ['inputs.a.s == "abc"', true],
    ['inputs["a"].s == "abc"', true],
    ['inputs["a"]["s"] == "abc"', true],
    ["inputs['a']['obj']['p'].q.r[0]['s'] == 'deep'", true],
    ['inputs.a.obj.p.q.r[0].s == "deep"', true],
    ['inputs.a.nested[1][1].k[-1] == "x"', true],
    ['(inputs.a.obj).p.q.r[-1].s == "deep"', true],
    ['inputs.a.l[-1] == 3', true],
    ['inputs.a.l[-3] == 1', true],
    ['inputs.a.l[3] == None', true],
    ['inputs.a.l[-4] == None', true],
    ['inputs.a.l[99999999999999999999] == None', true],
    ['inputs.a.none.x == None', true],
    ['inputs.a.none[0].x == None', true],
    ['inputs.a.missing == None', true],
    ['inputs.a.missing.deeper[0] == None', true],
    ['inputs.a.l.x == None', true],
    ['inputs.a.obj[0] == None', true],
    ['inputs.a.one.x == None', true],
    ['inputs.a.s[0] == "a"', true],
    ['inputs.a.s[-1] == "c"', true],
    ['inputs.a.emoji[1] == "😀"', true],
    ['inputs.a.in == "keyword field"', true],
    ['inputs.a.constructor == None', true],
    ['inputs.a.__proto__ == None', true],
    ['inputs.a.toString == None', true],
  ])('%s is %p', (expression, expected) => {
    expect(value(expression)).toBe(expected);
  });

  it('reads a dependency absent from inputs, or null, as None', () => {
    expect(value('inputs.b == None', { a: A })).toBe(true);
    expect(value('inputs.b.x == None', { a: A, b: null })).toBe(true);
    expect(value('inputs.b', { a: A, b: 0 })).toBe(false);
  });

  it('reads dependencies whose names contain "-", "/" and "."', () => {
    const inputs = { 't-a': { v: 1 }, 'prep/x': { v: 2 }, 'eval.v1': { v: 3 } };
    expect(value('inputs["t-a"].v == 1 and inputs["prep/x"].v == 2 and inputs["eval.v1"]["v"] == 3', inputs)).toBe(true);
  });

  it('does not read inherited properties of inputs', () => {
    expect(value('inputs.constructor == None', {}, ['constructor'])).toBe(true);
  });

  it('treats values that are not JSON as None', () => {
    expect(value('inputs.a.u == None and inputs.a.fn == None', { a: { u: undefined, fn: () => 1 } })).toBe(true);
  });

  it('converts the result with Python truthiness', () => {
    const truth = (v: unknown): boolean => value('inputs.a', { a: v });
    expect([0, 0.0, '', [], {}, null, false].map(truth)).toEqual([false, false, false, false, false, false, false]);
    expect([1, -0.5, 'x', [0], { k: null }, true].map(truth)).toEqual([true, true, true, true, true, true]);
  });
});

describe('Python semantics', () => {
  it.each([
    ['inputs.a.one == 1.0', true],
    ['inputs.a.t == 1', true],
    ['inputs.a.f == 0', true],
    ['inputs.a.t == 2', false],
    ['inputs.a.one == "1"', false],
    ['inputs.a.none == False', false],
    ['inputs.a.none != 0', true],
    ['inputs.a.nested == inputs.b.nestedEqual', true],
    ['inputs.a.nested != inputs.b.nestedEqual', false],
    ['inputs.a.nested == inputs.b.nestedOther', false],
    ['inputs.a.nested != inputs.b.nestedOther', true],
    ['inputs.a.nested[1] == [2.0, inputs.b.nestedEqual[1][1]]', true],
    ['inputs.a.obj == inputs.b.obj', true],
    ['inputs.a.obj == inputs.b.objExtra', false],
    ['"ab" in inputs.a.s', true],
    ['"" in inputs.a.s', true],
    ['[2, inputs.b.nestedEqual[1][1]] in inputs.a.nested', true],
    ['[1, 2, 3.0] in [inputs.a.l]', true],
    ['"p" in inputs.a.obj', true],
    ['"q" in inputs.a.obj', false],
    ['1 in inputs.b.numkeys', false],
    ['None == inputs.a.none', true],
    ['inputs.a.l != None', true],
    ['inputs.a.t < 2', true],
    ['inputs.a.half < inputs.a.t', true],
    ['"B" < "a" < inputs.a.s', true],
    ['inputs.a.l < [1, 2, 4]', true],
    ['inputs.a.l > [1, 2]', true],
    ['inputs.a.l <= [1, 2, 3]', true],
  ])('%s is %p', (expression, expected) => {
    const inputs = {
      a: A,
      b: {
        obj: { p: { q: { r: [{ s: 'deep' }] } } },
        objExtra: { p: { q: { r: [{ s: 'deep' }] } }, z: null },
        nestedEqual: [1.0, [2, { k: [1, 'x'] }]],
        nestedOther: [1, [2, { k: [true, 'y'] }]],
        numkeys: { 1: 'one' },
      },
    };
    expect(value(expression, inputs)).toBe(expected);
  });

  it.each([
    ['inputs.a.s > 1', 'cannot compare str and int with > (column 12)'],
    ['inputs.a.half >= "x"', 'cannot compare float and str with >= (column 15)'],
    ['inputs.a.obj < inputs.a.obj', 'cannot compare dict and dict with < (column 14)'],
    ['inputs.a.l <= 1', 'cannot compare list and int with <= (column 12)'],
    ['inputs.a.nested < [1, "x"]', 'cannot compare list and str with < (column 17)'],
    ['1 in inputs.a.s', "'in <string>' requires string as left operand, not int (column 3)"],
    ['1 not in inputs.a.s', "'in <string>' requires string as left operand, not int (column 3)"],
    ['"x" in inputs.a.one', "argument of type 'int' is not iterable (column 5)"],
    ['"x" in inputs.a.half', "argument of type 'float' is not iterable (column 5)"],
    ['"x" in inputs.a.t', "argument of type 'bool' is not iterable (column 5)"],
    ['[1] in inputs.a.obj', "unhashable type: 'list' (column 5)"],
    ['inputs.a.obj in inputs.a.obj', "unhashable type: 'dict' (column 14)"],
  ])('%s is an error: %s', (expression, message) => {
    expect(errorOf(expression)).toBe(message);
  });

  it('reports an error even when the rest of the expression would decide the result', () => {
    expect(run('inputs.a.s > 0 or True')).toMatchObject({ ok: false });
    expect(run('not (inputs.a.s > 0)')).toMatchObject({ ok: false });
  });

  it('keeps an error between non-null values nested in lists, and reads a null that decides as unknown', () => {
    expect(errorOf('inputs.a.nested < [1, "x"]')).toBe('cannot compare list and str with < (column 17)');
    expect(errorOf('[inputs.a.none, "x"] < [None, 1]')).toBe('cannot compare str and int with < (column 22)');
    expect(truth('[1, inputs.a.none] < [1, 2]')).toBe('unknown');
    expect(truth('[0, inputs.a.none] < [1, 2]')).toBe(true);
  });
});

describe('aggregates', () => {
  const inputs = {
    't-a': { ok: true, score: 0.9, n: 1 },
    't-b': { ok: false, score: 0.4, n: 2 },
    't-c': { ok: true, score: 0.7, n: 3 },
    'prep/x': { ok: true },
    'prep/y': { ok: true },
    a: { threshold: 0.5 },
  };

  it.each([
    ['all(inputs["t-*"].ok)', false],
    ['all(inputs["prep/*"].ok)', true],
    ['all(inputs["t-[ac]"].ok)', true],
    ['all(inputs["t-[!b]"].ok)', true],
    ['all(inputs["t-?"].score > 0.3)', true],
    ['any(inputs["t-*"].ok)', true],
    ['any(not inputs["t-*"].ok)', true],
    ['any(inputs["t-*"].score > 0.95)', false],
    ['count(inputs["t-*"].ok) == 2', true],
    ['count(inputs["t-*"].ok) >= 2 and count(inputs["t-*"].n) == 3', true],
    ['count(inputs["t-*"]) == 3', true],
    ['count(inputs["t-*"].score > inputs.a.threshold) == 2', true],
    ['almost_all(inputs["t-*"].ok, 0)', false],
    ['almost_all(inputs["t-*"].ok, 1)', true],
    ['almost_all(inputs["t-*"].score > 0.8, 1)', false],
    ['almost_all(inputs["t-*"].score > 0.8, 2)', true],
    ['all(inputs["t-*"].ok == inputs["t-*"]["ok"])', true],
    ['all(inputs["t-[a-b]"].n < 3)', true],
    ['all(inputs.*)', false],
    ['count(inputs.*.ok) == 4', true],
    ['[count(inputs["t-*"].ok), any(inputs["t-*"].ok)] == [2, True]', true],
  ])('%s is %p', (expression, expected) => {
    expect(value(expression, inputs)).toBe(expected);
  });

  it('iterates inputs.* over every dependency', () => {
    expect(value('all(inputs.*)', inputs, Object.keys(inputs))).toBe(true);
    expect(value('count(inputs.*) == 6', inputs, Object.keys(inputs))).toBe(true);
  });

  it('gives the neutral result when no dependency matches', () => {
    expect(value('all(inputs["zz-*"].ok)', inputs)).toBe(true);
    expect(value('any(inputs["zz-*"].ok)', inputs)).toBe(false);
    expect(value('count(inputs["zz-*"].ok) == 0', inputs)).toBe(true);
    expect(value('almost_all(inputs["zz-*"].ok, 0)', inputs)).toBe(true);
  });

  it('reads a matching dependency absent from inputs as None', () => {
    expect(value('count(inputs["t-*"].ok) == 1', { 't-a': { ok: true } })).toBe(true);
  });

  it('counts a dependency listed twice in dependsOn once', () => {
    expect(value('count(inputs["t-*"].ok) == 1', { 't-a': { ok: true } }, ['t-a', 't-a'])).toBe(true);
  });

  it('evaluates every match, so an error is not hidden by an earlier deciding result', () => {
    const withError = { 't-a': { x: 1 }, 't-b': { x: 'b' }, 't-c': { x: 1 } };
    expect(errorOf('any(inputs["t-*"].x > 0)', withError)).toBe('cannot compare str and int with > (column 21) in any() for "t-b"');
    expect(run('all(inputs["t-*"].x < 0)', withError)).toMatchObject({ ok: false });
    expect(run('count(inputs["t-*"].x > 0) >= 0', withError)).toMatchObject({ ok: false });
  });

  it('visits matches in code-unit order, whatever the order of dependsOn', () => {
    const twoErrors = { 't-b': { x: 'b' }, 't-c': { x: null }, 'T-z': { x: [] } };
    const reversed = ['t-c', 't-b', 'T-z'];
    expect(errorOf('all(inputs["?-*"].x > 0)', twoErrors, reversed)).toContain('for "T-z"');
    expect(errorOf('all(inputs["t-*"].x > 0)', twoErrors, reversed)).toContain('for "t-b"');
  });

  it('does not rewrite "inputs.*" inside a string literal', () => {
    const named = { 't-a': { name: 'inputs.*' }, 't-b': { name: 'other' } };
    expect(value('any(inputs.*.name == "inputs.*")', named)).toBe(true);
    expect(value('count(inputs.*.name == "inputs.*") == 1', named)).toBe(true);
  });
});

describe('evaluateCondition robustness', () => {
  it('gives the same answer after a JSON round trip of the compiled condition', () => {
    const condition = compile('count(inputs["t-*"].ok) >= 1 and inputs.a.l[-1] == 3 and not inputs.a.none');
    const revived = JSON.parse(JSON.stringify(condition)) as CompiledCondition;
    const inputs = { a: A, 't-a': { ok: true } };
    expect(evaluateCondition(revived, inputs)).toEqual(evaluateCondition(condition, inputs));
    expect(evaluateCondition(revived, inputs)).toMatchObject({ ok: true, value: true });
  });

  it('returns an error for a corrupted condition instead of throwing', () => {
    const bogus = { source: 'x', ast: { type: 'bogus' }, dependsOn: [], references: [] } as unknown as CompiledCondition;
    expect(evaluateCondition(bogus, {})).toMatchObject({ ok: false, error: expect.stringContaining('bogus') });
    expect(evaluateCondition(null as unknown as CompiledCondition, {})).toMatchObject({ ok: false });
    const glob = compile('all(inputs["t-*"].ok)');
    const stray = { ...glob, ast: (glob.ast as { argument: unknown }).argument } as CompiledCondition;
    expect(evaluateCondition(stray, {})).toMatchObject({ ok: false });
  });

  it('treats missing inputs as no outputs', () => {
    expect(evaluateCondition(compile('inputs.a == None'), null as unknown as Record<string, unknown>)).toMatchObject({
      ok: true,
      value: true,
    });
  });

  it('reports values too deep to compare as an error', () => {
    let deep: unknown = [];
    for (let i = 0; i < 10_000; i += 1) deep = [deep];
    expect(run('inputs.a.d == inputs.b.d', { a: { d: deep }, b: { d: deep } })).toMatchObject({
      ok: false,
      error: expect.stringContaining('nested too deeply'),
    });
  });

  it('survives a throwing getter in the inputs', () => {
    const hostile = Object.defineProperty({}, 'x', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(run('inputs.a.x', { a: hostile })).toEqual({ ok: false, error: expect.stringContaining('boom') });
  });
});
