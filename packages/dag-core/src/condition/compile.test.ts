import { describe, expect, it } from '@jest/globals';
import type { Issue } from '../result';
import { compileCondition, type CompiledCondition } from './index';
import { MAX_CONDITION_DEPTH, MAX_CONDITION_LENGTH } from './parser';

const DEPENDS_ON = ['a', 'b', 'train-a', 'train-b', 'train-c', 'prep/x', 'prep/y', 'eval.v1'];

function issuesOf(expression: string, dependsOn: readonly string[] = DEPENDS_ON): Issue[] {
  const result = compileCondition(expression, dependsOn);
  if (result.ok) throw new Error(`expected ${JSON.stringify(expression)} to be rejected`);
  return result.issues;
}

function compiled(expression: string, dependsOn: readonly string[] = DEPENDS_ON): CompiledCondition {
  const result = compileCondition(expression, dependsOn);
  if (!result.ok) throw new Error(`unexpected issues: ${JSON.stringify(result.issues)}`);
  return result.value;
}

describe('compileCondition: accepted expressions', () => {
  it('returns plain data that survives JSON', () => {
    const condition = compiled('inputs.a.score >= 0.5 and all(inputs["train-*"].ok)');
    expect(JSON.parse(JSON.stringify(condition))).toEqual(condition);
    expect(condition.source).toBe('inputs.a.score >= 0.5 and all(inputs["train-*"].ok)');
    expect(condition.dependsOn).toEqual(DEPENDS_ON);
  });

  it('copies dependsOn rather than sharing the caller array', () => {
    const dependsOn = ['a'];
    const condition = compiled('inputs.a', dependsOn);
    dependsOn.push('b');
    expect(condition.dependsOn).toEqual(['a']);
  });

  it.each([
    'inputs.a',
    'inputs["train-a"].metrics["f1"][0] > 0.9',
    'inputs.a.list[-1] == 3',
    'inputs.a.x in [1, 2.5, "s", None, true, (1,), ()]',
    '(inputs.a).x[0] and inputs.b.in.null',
    'almost_all(inputs["train-*"].ok, 0,)',
  ])('accepts %s', (expression) => {
    expect(compileCondition(expression, DEPENDS_ON).ok).toBe(true);
  });

  it('accepts multi-line expressions', () => {
    expect(compileCondition('inputs.a.x\n  and inputs.b.y', DEPENDS_ON).ok).toBe(true);
  });

  it('reports no warnings', () => {
    const result = compileCondition('inputs.a.x', DEPENDS_ON);
    expect(result.ok && result.warnings).toEqual([]);
  });
});

describe('compileCondition: references', () => {
  it('lists exact names once, sorted', () => {
    expect(compiled('inputs.b.x and inputs["a"].y and inputs.b.z').references).toEqual(['a', 'b']);
  });

  it('lists every dependency matched by a glob', () => {
    expect(compiled('all(inputs["train-*"].ok)').references).toEqual(['train-a', 'train-b', 'train-c']);
    expect(compiled('any(inputs["prep/*"].ok) or inputs.a.ok').references).toEqual(['a', 'prep/x', 'prep/y']);
    expect(compiled('count(inputs["train-[!b]"].ok) > 0').references).toEqual(['train-a', 'train-c']);
  });

  it('lists every dependency for inputs.*', () => {
    expect(compiled('all(inputs.*.ok)').references).toEqual([...DEPENDS_ON].sort());
  });

  it('accepts a glob that matches nothing, with no reference', () => {
    expect(compiled('all(inputs["zz-*"].ok)').references).toEqual([]);
  });

  it('names dependencies whose names contain "-", "/" and "."', () => {
    expect(compiled('inputs["eval.v1"].x and inputs["prep/x"].y').references).toEqual(['eval.v1', 'prep/x']);
  });
});

describe('compileCondition: disallowed constructs (code and column)', () => {
  it.each([
    // arithmetic
    ['inputs.a.x + 1', 12],
    ['inputs.a.x - 1 > 0', 12],
    ['inputs.a.x * 2', 12],
    ['inputs.a.x / 2', 12],
    ['inputs.a.x // 2', 12],
    ['inputs.a.x % 2', 12],
    ['inputs.a.x ** 2', 12],
    ['-inputs.a.x > 0', 1],
    ['0 < - inputs.a.x', 5],
    ['--1 == inputs.a.x', 1],
    ['-(1) == inputs.a.x', 1],
    ['+1 == inputs.a.x', 1],
    // bitwise
    ['inputs.a.x & 1', 12],
    ['inputs.a.x | inputs.b.y', 12],
    ['inputs.a.x ^ 1', 12],
    ['~inputs.a.x', 1],
    ['inputs.a.x << 1', 12],
    ['inputs.a.x >> 1', 12],
    // identity
    ['inputs.a.x is None', 12],
    ['inputs.a.x is not None', 12],
    // slices and subscripts
    ['inputs.a.x[1:2]', 13],
    ['inputs.a.x[:2] == []', 12],
    ['inputs.a.x[1, 2]', 13],
    ['inputs.a.l[inputs.b.i]', 12],
    ['inputs.a.l[1.5]', 12],
    ['inputs.a.l[True]', 12],
    ['inputs.a.l[(0)]', 12],
    ['inputs[inputs.a.k].y', 8],
    ['inputs[0].x', 8],
    ['inputs["a" if inputs.b.x else "b"].y', 12],
    ['[1, 2][0] == inputs.a.x', 7],
    // comprehensions, lambdas, conditional expressions, walrus
    ['[v for v in inputs.a.l]', 4],
    ['all(v for v in inputs["train-*"])', 7],
    ['lambda: inputs.a.x', 1],
    ['inputs.a.x if inputs.b.y else False', 12],
    ['(y := inputs.a.x)', 4],
    // dict and set literals
    ['inputs.a.x in {}', 15],
    ['inputs.a.x in {1, 2}', 15],
    ['{"k": 1} == inputs.a.x', 1],
    // calls
    ['len(inputs.a.l) > 0', 1],
    ['inputs.a.x.upper()', 17],
    ['(inputs.a.x)(1)', 13],
    // attribute access on non-references
    ['"abc".upper == inputs.a.x', 6],
    ['(1).x == inputs.a.x', 4],
    ['[inputs.a.x].y', 13],
    // names
    ['x > 1 and inputs.a.y', 1],
    ['inputs.a.y and True and count', 25],
    ['inputs == 1', 1],
    ['inputs.a.x == inputs', 15],
    // aggregates
    ['all(inputs.a.ok)', 1],
    ['all(any(inputs["train-*"].ok))', 5],
    ['all(inputs["train-*"].ok and inputs["prep/*"].ok)', 37],
    ['inputs["train-*"].ok', 8],
    ['inputs.*.ok', 8],
    ['almost_all(inputs["train-*"].ok)', 1],
    ['almost_all(inputs["train-*"].ok, -1)', 34],
    ['almost_all(inputs["train-*"].ok, 1.0)', 34],
    ['almost_all(inputs["train-*"].ok, inputs.a.k)', 34],
    ['all(inputs["train-*"].ok, 1)', 1],
    ['almost_all(inputs["train-*"].ok, k=1)', 34],
    ['all(*inputs["train-*"])', 5],
    ['all(x=inputs["train-*"])', 5],
  ])('%s is condition-disallowed at column %i', (expression, column) => {
    const issues = issuesOf(expression);
    expect(issues).toContainEqual(expect.objectContaining({ code: 'condition-disallowed', column, path: '' }));
  });

  it('explains a task name with "-" written with a dot', () => {
    const issues = issuesOf('inputs.train-a.score > 0.5');
    const disallowed = issues.find((issue) => issue.code === 'condition-disallowed');
    expect(disallowed).toMatchObject({ column: 13, message: expect.stringContaining('inputs["train-a"]') });
    // "train" itself is not a dependency either.
    expect(issues[0]).toMatchObject({ code: 'condition-unknown-input', column: 8 });
  });

  it('names the construct in the message', () => {
    expect(issuesOf('inputs.a.x + 1')[0]?.message).toContain("'+'");
    expect(issuesOf('len(inputs.a.l) > 0')[0]?.message).toContain('len()');
    expect(issuesOf('all(inputs.a.ok)')[0]?.message).toContain('aggregate needs a glob reference such as inputs["train-*"]');
    expect(issuesOf('inputs.a.x is None')[0]?.message).toContain("'is'");
  });

  it('reports every independent disallowed construct, in column order', () => {
    const issues = issuesOf('inputs.a.x + 1 > inputs.b.y * 2 or len(inputs.a.z)');
    expect(issues.map((issue) => [issue.code, issue.column])).toEqual([
      ['condition-disallowed', 12],
      ['condition-disallowed', 29],
      ['condition-disallowed', 36],
    ]);
  });

  it('reports a disallowed construct only once, not again for what is built on it', () => {
    expect(issuesOf('len(inputs.a.l).x[0]("y") == inputs.a.x')).toHaveLength(1);
    expect(issuesOf('inputs[inputs.a.k].y')).toHaveLength(1);
  });

  it('reports disallowed constructs together with unknown inputs', () => {
    const issues = issuesOf('inputs.zz.x + 1');
    expect(issues.map((issue) => [issue.code, issue.column])).toEqual([
      ['condition-unknown-input', 8],
      ['condition-disallowed', 13],
    ]);
  });
});

describe('compileCondition: inputs', () => {
  it('rejects a task that is not a dependency, naming it', () => {
    const issues = issuesOf('inputs.zz.x > 0');
    expect(issues).toEqual([expect.objectContaining({ code: 'condition-unknown-input', column: 8, path: '' })]);
    expect(issues[0]?.message).toContain('"zz"');
  });

  it('reports each unknown task once, at its first occurrence', () => {
    const issues = issuesOf('inputs["zz"].x or inputs.yy or inputs.zz.y or inputs.a.ok');
    expect(issues.map((issue) => [issue.code, issue.column])).toEqual([
      ['condition-unknown-input', 8],
      ['condition-unknown-input', 26],
    ]);
  });

  it('checks exact names only against dependsOn, not globs', () => {
    expect(compileCondition('any(inputs["nothing-*"].ok)', []).ok).toBe(true);
    expect(issuesOf('inputs.a.ok', [])[0]).toMatchObject({ code: 'condition-unknown-input', column: 8 });
  });

  it('matches names exactly (case-sensitively)', () => {
    expect(issuesOf('inputs.A.ok')[0]).toMatchObject({ code: 'condition-unknown-input' });
  });

  it.each(['True', '1 < 2', '"inputs.a" == "x"', '[1, 2]'])('rejects %s, which reads no input', (expression) => {
    expect(issuesOf(expression)).toEqual([expect.objectContaining({ code: 'condition-no-input', column: 1 })]);
  });
});

describe('compileCondition: syntax errors', () => {
  it.each([
    ['', 1],
    ['   \n\t', 1],
    ['inputs.a.x $ 1', 12],
    ['inputs.a.x @ inputs.b.y', 12],
    ['inputs.a.x; inputs.b.y', 11],
    ['inputs.a.x ==', 14],
    ['(inputs.a.x', 12],
    ['[inputs.a.x', 12],
    ['inputs.a.x inputs.b.y', 12],
    ['inputs.a.x > 0 and', 19],
    ['inputs.', 8],
    ['inputs.a.', 10],
    ['inputs.a.x[]', 12],
    ['inputs.a.x == "abc', 15],
    ['inputs.a.x not 1', 12],
    ['inputs.a.x = 1', 12],
    ['all(inputs.*.ok', 16],
    ['inputs.a.x if inputs.b.y', 25],
    ['inputs.a.x == 1 2', 17],
    ['and inputs.a.x', 1],
    ['inputs.a.x <> 1', 13],
    ['inputs.**.x', 8],
  ])('%j is condition-syntax at column %i', (expression, column) => {
    const issues = issuesOf(expression);
    expect(issues).toEqual([expect.objectContaining({ code: 'condition-syntax', column, path: '' })]);
  });

  it('says what was expected and what was found', () => {
    expect(issuesOf('(inputs.a.x')[0]?.message).toBe("expected ')' to close '(' at column 1, found the end of the expression");
    expect(issuesOf('inputs.a.x ==')[0]?.message).toBe('expected an expression, found the end of the expression');
  });

  it(`accepts ${MAX_CONDITION_DEPTH} nesting levels and rejects one more`, () => {
    const nest = (depth: number): string => `${'('.repeat(depth)}inputs.a.x${')'.repeat(depth)}`;
    expect(compileCondition(nest(MAX_CONDITION_DEPTH), DEPENDS_ON).ok).toBe(true);
    expect(issuesOf(nest(MAX_CONDITION_DEPTH + 1))).toEqual([
      expect.objectContaining({ code: 'condition-syntax', message: expect.stringContaining('nested too deeply') }),
    ]);
  });

  it.each([
    ['brackets', `${'['.repeat(4000)}inputs.a.x${']'.repeat(4000)}`],
    ['not', `${'not '.repeat(2000)}inputs.a.x`],
    ['unary minus', `${'-'.repeat(5000)}inputs.a.x`],
    ['power', `inputs.a.x${' ** 2'.repeat(1500)}`],
    ['calls', `inputs.a.x${'(1'.repeat(3000)}`],
    ['conditional expressions', `inputs.a.x${' if 1 else 2'.repeat(500)}`],
    ['dicts', `${'{'.repeat(5000)}`],
  ])('rejects deep nesting of %s without overflowing the stack', (_, expression) => {
    expect(issuesOf(expression)[0]).toMatchObject({ code: 'condition-syntax' });
  });

  it(`accepts ${MAX_CONDITION_LENGTH} characters and rejects longer expressions`, () => {
    const atLimit = `inputs.a.x == "${'x'.repeat(MAX_CONDITION_LENGTH - 16)}"`;
    expect(atLimit).toHaveLength(MAX_CONDITION_LENGTH);
    expect(compileCondition(atLimit, DEPENDS_ON).ok).toBe(true);
    expect(issuesOf(`${atLimit} `)).toEqual([expect.objectContaining({ code: 'condition-syntax', column: MAX_CONDITION_LENGTH + 1 })]);
  });

  it('handles long flat chains, which do not nest', () => {
    const chain = Array.from({ length: 400 }, (_, i) => `inputs.a.x${i % 2 ? '.y' : '[0]'} == ${i}`).join(' or ');
    expect(chain.length).toBeLessThanOrEqual(MAX_CONDITION_LENGTH);
    expect(compileCondition(chain, DEPENDS_ON).ok).toBe(true);
  });

  it('never throws on non-string input from untyped callers', () => {
    expect(compileCondition(42 as unknown as string, DEPENDS_ON)).toMatchObject({ ok: false });
    expect(compileCondition('inputs.a', null as unknown as string[])).toMatchObject({ ok: false });
  });
});
