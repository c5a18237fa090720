import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Result } from '../result';
import { compileCondition, evaluateCondition, type CompiledCondition, type ConditionEvaluation } from './index';
import { pythonContains, pythonEquals } from './python';

const DEPENDS_ON = ['a', 'b', 't-a', 't-b', 'prep/x'];
const CODES = ['condition-syntax', 'condition-disallowed', 'condition-unknown-input', 'condition-no-input'];
const RUNS = { numRuns: 500 };

/** Compiles, asserting the contract that holds for any input whatsoever. */
function checkedCompile(source: string, dependsOn: readonly string[] = DEPENDS_ON): Result<CompiledCondition> {
  const result = compileCondition(source, dependsOn);
  if (result.ok) {
    const { references } = result.value;
    expect(references.every((name) => dependsOn.includes(name))).toBe(true);
    expect([...references].sort()).toEqual(references);
    expect(JSON.parse(JSON.stringify(result.value))).toEqual(result.value);
  } else {
    expect(result.issues.length).toBeGreaterThan(0);
    for (const issue of result.issues) {
      expect(CODES).toContain(issue.code);
      expect(issue.path).toBe('');
      expect(Number.isInteger(issue.column)).toBe(true);
      expect(issue.column).toBeGreaterThanOrEqual(1);
      expect(issue.column).toBeLessThanOrEqual(source.length + 1);
      expect(issue.message.length).toBeGreaterThan(0);
      expect(issue.message).not.toMatch(/^internal error/);
    }
  }
  return result;
}

function checkedEvaluate(condition: CompiledCondition, inputs: Record<string, unknown>): ConditionEvaluation {
  const result = evaluateCondition(condition, inputs);
  if (result.ok) {
    expect(typeof result.value).toBe('boolean');
  } else {
    expect(typeof result.error).toBe('string');
    expect(result.error.length).toBeGreaterThan(0);
    expect(result.error).not.toMatch(/could not be evaluated/);
  }
  return result;
}

// Outputs shaped like the fields the generated expressions read, mixed with arbitrary JSON.
const output = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record(
    {
      x: fc.jsonValue({ maxDepth: 2 }),
      y: fc.oneof(fc.integer({ min: -3, max: 3 }), fc.string({ maxLength: 3 }), fc.constant(null)),
      ok: fc.boolean(),
      'k-1': fc.array(fc.integer({ min: -2, max: 2 }), { maxLength: 3 }),
    },
    { requiredKeys: [] },
  ),
);
const inputsArbitrary = fc.dictionary(fc.constantFrom(...DEPENDS_ON), output);

const TOKENS = [
  'inputs', 'inputs.a', 'inputs.b.x', 'inputs.zz', 'inputs["t-*"]', 'inputs["prep/*"]', 'inputs.*',
  '.', '.x', '.ok', '.*', '[0]', '[-1]', '["x"]', '[', ']', '(', ')', ',', ':', '{', '}',
  '0', '1', '-1', '2.5', '.5', '1e3', '"x"', "'t-*'", '"inputs.*"', '"', "'", '\\',
  'True', 'False', 'None', 'true', 'false', 'null',
  'and', 'or', 'not', 'in', 'is', 'if', 'else', 'lambda', 'for',
  '==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '//', '%', '**', '&', '|', '^', '~', '<<', '>>', ':=', '=',
  'all', 'any', 'count', 'almost_all', 'len', 'x', '$', '@', ';', '\n', '😀',
];
const tokenSoup = fc
  .tuple(fc.array(fc.constantFrom(...TOKENS), { maxLength: 30 }), fc.constantFrom('', ' '))
  .map(([tokens, separator]) => tokens.join(separator));

// ---- a generator of valid expressions --------------------------------------------------

const path = fc
  .array(fc.constantFrom('.x', '.y', '.ok', '["x"]', '["k-1"]', '[0]', '[-1]', '[2]'), { maxLength: 3 })
  .map((segments) => segments.join(''));
const reference = fc
  .tuple(fc.constantFrom('inputs.a', 'inputs["b"]', 'inputs["t-a"]', "inputs['prep/x']"), path)
  .map(([root, rest]) => root + rest);
const globReference = fc
  .tuple(fc.constantFrom('inputs["t-*"]', 'inputs.*', 'inputs["prep/*"]', 'inputs["[!t]*"]', 'inputs["zz-?"]'), path)
  .map(([root, rest]) => root + rest);
const literal = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.string({ maxLength: 5, unit: 'binary' }).map((s) => JSON.stringify(s)),
  fc.constantFrom('True', 'False', 'None', 'true', 'false', 'null', '[]', '()', '[1, "x"]', '(0,)'),
);
const compareOperator = fc.constantFrom('==', '!=', '<', '<=', '>', '>=', 'in', 'not in');
const aggregate = fc
  .tuple(
    fc.constantFrom('all', 'any', 'count', 'almost_all'),
    globReference,
    compareOperator,
    fc.oneof(literal, reference),
    fc.nat(3),
  )
  .map(([fn, glob, op, right, k]) => {
    const argument = `${glob} ${op} ${right}`;
    return fn === 'almost_all' ? `almost_all(${argument}, ${k})` : `${fn}(${argument})`;
  });

const { expression } = fc.letrec<{ expression: string }>((tie) => ({
  expression: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    reference,
    literal,
    aggregate,
    tie('expression').map((e) => `not (${e})`),
    fc
      .tuple(tie('expression'), fc.constantFrom('and', 'or'), tie('expression'))
      .map(([a, op, b]) => `(${a}) ${op} (${b})`),
    fc
      .tuple(tie('expression'), fc.array(fc.tuple(compareOperator, tie('expression')), { minLength: 1, maxLength: 2 }))
      .map(([first, rest]) => [`(${first})`, ...rest.map(([op, e]) => `${op} (${e})`)].join(' ')),
    fc.array(tie('expression'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
  ),
}));
// Guarantee at least one reference so the expression compiles.
const validCondition = fc.tuple(expression, reference).map(([e, ref]) => `(${e}) or ${ref}`);

// Valid conditions with a few random edits: reaches deeper into the grammar than token soups.
const editedCondition = fc
  .tuple(
    validCondition,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'replace'), fc.constantFrom(...TOKENS)), {
      minLength: 1,
      maxLength: 3,
    }),
  )
  .map(([source, edits]) =>
    edits.reduce((text, [at, kind, token]) => {
      const i = at % (text.length + 1);
      if (kind === 'insert') return text.slice(0, i) + token + text.slice(i);
      if (kind === 'delete') return text.slice(0, i) + text.slice(i + 1 + (at % 3));
      return text.slice(0, i) + token + text.slice(i + token.length);
    }, source),
  );

describe('compileCondition never throws', () => {
  it('on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (source) => {
        checkedCompile(source);
      }),
      RUNS,
    );
  });

  it('on arbitrary Unicode strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40, unit: 'binary' }), (source) => {
        checkedCompile(source);
      }),
      RUNS,
    );
  });

  it('on strings with lone surrogates', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20, unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }), (source) => {
        checkedCompile(`inputs.a == "${source}" ${source}`);
      }),
      RUNS,
    );
  });

  it('on token soups, and what compiles evaluates without throwing', () => {
    fc.assert(
      fc.property(tokenSoup, inputsArbitrary, (source, inputs) => {
        const result = checkedCompile(source);
        if (result.ok) checkedEvaluate(result.value, inputs);
      }),
      { numRuns: 1000 },
    );
  });

  it('on edited valid conditions, and what compiles evaluates without throwing', () => {
    fc.assert(
      fc.property(editedCondition, inputsArbitrary, (source, inputs) => {
        const result = checkedCompile(source);
        if (result.ok) checkedEvaluate(result.value, inputs);
      }),
      RUNS,
    );
  });

  it('on arbitrary dependency names', () => {
    fc.assert(
      fc.property(tokenSoup, fc.array(fc.string({ maxLength: 6 }), { maxLength: 5 }), (source, dependsOn) => {
        checkedCompile(source, dependsOn);
      }),
      RUNS,
    );
  });
});

describe('valid conditions', () => {
  it('compile, and evaluate on any JSON inputs to a boolean or an error message', () => {
    fc.assert(
      fc.property(validCondition, inputsArbitrary, (source, inputs) => {
        const result = checkedCompile(source);
        expect(result.ok).toBe(true);
        if (result.ok) checkedEvaluate(result.value, inputs);
      }),
      RUNS,
    );
  });

  it('evaluate the same after a JSON round trip', () => {
    fc.assert(
      fc.property(validCondition, inputsArbitrary, (source, inputs) => {
        const result = compileCondition(source, DEPENDS_ON);
        if (!result.ok) return;
        const revived = JSON.parse(JSON.stringify(result.value)) as CompiledCondition;
        expect(evaluateCondition(revived, inputs)).toEqual(evaluateCondition(result.value, inputs));
      }),
      RUNS,
    );
  });

  it('negate under not, failing exactly when the original fails', () => {
    fc.assert(
      fc.property(validCondition, inputsArbitrary, (source, inputs) => {
        const plain = compileCondition(source, DEPENDS_ON);
        const negated = compileCondition(`not (${source})`, DEPENDS_ON);
        if (!plain.ok || !negated.ok) throw new Error('generated condition did not compile');
        const a = evaluateCondition(plain.value, inputs);
        const b = evaluateCondition(negated.value, inputs);
        if (a.ok && b.ok) {
          expect(b.value).toBe(!a.value);
        } else {
          // Same error, only shifted by the 5 characters of "not (".
          const shift = (error: string): string => error.replace(/\(column (\d+)\)/, (_, c: string) => `(column ${Number(c) + 5})`);
          expect(b).toEqual(a.ok ? a : { ok: false, error: shift(a.error) });
        }
      }),
      RUNS,
    );
  });
});

describe('Python value model', () => {
  it('== is reflexive and symmetric on JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(pythonEquals(a, a)).toBe(true);
        expect(pythonEquals(structuredClone(a), a)).toBe(true);
        expect(pythonEquals(a, b)).toBe(pythonEquals(b, a));
      }),
      RUNS,
    );
  });

  it('every value is in a list holding it', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (a) => {
        expect(pythonContains([0, a], a)).toBe(true);
      }),
      RUNS,
    );
  });
});
