import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Result } from '../result';
import {
  compileCondition,
  conditionSkipReason,
  evaluateCondition,
  MAX_SKIP_REASON_LENGTH,
  type CompiledCondition,
  type ConditionEvaluation,
  type ConditionTruth,
} from './index';
import { pythonContains, pythonEquals } from './python';
import { evaluateTwoValued } from './test-helpers/two-valued';

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
    expect([true, false, 'unknown']).toContain(result.truth);
    expect(result.value).toBe(result.truth === true);
    expect(result.explanation).not.toMatch(/[\r\n]/);
    const reason = conditionSkipReason(result);
    if (result.value) expect(reason).toBeNull();
    else expect(reason?.length).toBeLessThanOrEqual(MAX_SKIP_REASON_LENGTH);
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
  'inputs',
  'inputs.a',
  'inputs.b.x',
  'inputs.zz',
  'inputs["t-*"]',
  'inputs["prep/*"]',
  'inputs.*',
  '.',
  '.x',
  '.ok',
  '.*',
  '[0]',
  '[-1]',
  '["x"]',
  '[',
  ']',
  '(',
  ')',
  ',',
  ':',
  '{',
  '}',
  '0',
  '1',
  '-1',
  '2.5',
  '.5',
  '1e3',
  '"x"',
  "'t-*'",
  '"inputs.*"',
  '"',
  "'",
  '\\',
  'True',
  'False',
  'None',
  'true',
  'false',
  'null',
  'and',
  'or',
  'not',
  'in',
  'is',
  'if',
  'else',
  'lambda',
  'for',
  '==',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  '+',
  '-',
  '*',
  '/',
  '//',
  '%',
  '**',
  '&',
  '|',
  '^',
  '~',
  '<<',
  '>>',
  ':=',
  '=',
  'all',
  'any',
  'count',
  'almost_all',
  'len',
  'x',
  '$',
  '@',
  ';',
  '\n',
  '😀',
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
  .tuple(fc.constantFrom('all', 'any', 'count', 'almost_all'), globReference, compareOperator, fc.oneof(literal, reference), fc.nat(3))
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
    fc.tuple(tie('expression'), fc.constantFrom('and', 'or'), tie('expression')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
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

  it('negate under not (the negation of unknown is unknown), failing exactly when the original fails', () => {
    fc.assert(
      fc.property(validCondition, inputsArbitrary, (source, inputs) => {
        const plain = compileCondition(source, DEPENDS_ON);
        const negated = compileCondition(`not (${source})`, DEPENDS_ON);
        if (!plain.ok || !negated.ok) throw new Error('generated condition did not compile');
        const a = evaluateCondition(plain.value, inputs);
        const b = evaluateCondition(negated.value, inputs);
        if (a.ok && b.ok) {
          expect(b.truth).toBe(kleeneNot(a.truth));
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

function kleeneNot(truth: ConditionTruth): ConditionTruth {
  return truth === 'unknown' ? 'unknown' : !truth;
}

/** The outcome of a source over DEPENDS_ON: its truth, or `error`. */
function truthOf(source: string, inputs: Record<string, unknown>): ConditionTruth | 'error' {
  const compiled = compileCondition(source, DEPENDS_ON);
  if (!compiled.ok) throw new Error(`generated condition did not compile: ${source}`);
  const result = evaluateCondition(compiled.value, inputs);
  return result.ok ? result.truth : 'error';
}

describe('three-valued logic', () => {
  it('De Morgan holds in three values: not (A and B) is (not A) or (not B), not (A or B) is (not A) and (not B)', () => {
    fc.assert(
      fc.property(validCondition, expression, inputsArbitrary, (a, b, inputs) => {
        expect(truthOf(`not ((${a}) and (${b}))`, inputs)).toBe(truthOf(`(not (${a})) or (not (${b}))`, inputs));
        expect(truthOf(`not ((${a}) or (${b}))`, inputs)).toBe(truthOf(`(not (${a})) and (not (${b}))`, inputs));
      }),
      RUNS,
    );
  });

  it('and/or are commutative when neither side fails', () => {
    fc.assert(
      fc.property(validCondition, validCondition, inputsArbitrary, (a, b, inputs) => {
        if (truthOf(a, inputs) === 'error' || truthOf(b, inputs) === 'error') return;
        expect(truthOf(`(${a}) and (${b})`, inputs)).toBe(truthOf(`(${b}) and (${a})`, inputs));
        expect(truthOf(`(${a}) or (${b})`, inputs)).toBe(truthOf(`(${b}) or (${a})`, inputs));
      }),
      RUNS,
    );
  });

  it('any() is the or, all() the and, count() the number of true of the element over each match', () => {
    // "t-*" matches t-a and t-b in DEPENDS_ON.
    const element = fc
      .tuple(path, compareOperator, fc.oneof(literal, reference))
      .map(([rest, op, right]) => `inputs["t-*"]${rest} ${op} ${right}`);
    fc.assert(
      fc.property(element, inputsArbitrary, (e, inputs) => {
        const [ea, eb] = ['t-a', 't-b'].map((name) => e.replaceAll('inputs["t-*"]', `inputs["${name}"]`)) as [string, string];
        const parts = [truthOf(ea, inputs), truthOf(eb, inputs)];
        if (parts.includes('error')) {
          expect(truthOf(`any(${e})`, inputs)).toBe('error');
          return;
        }
        expect(truthOf(`any(${e})`, inputs)).toBe(truthOf(`(${ea}) or (${eb})`, inputs));
        expect(truthOf(`all(${e})`, inputs)).toBe(truthOf(`(${ea}) and (${eb})`, inputs));
        const trues = parts.filter((t) => t === true).length;
        expect(truthOf(`count(${e}) == ${trues}`, inputs)).toBe(true);
        expect(truthOf(`almost_all(${e}, 1)`, inputs)).toBe(trues >= 1);
      }),
      RUNS,
    );
  });
});

// ---- inputs where no null can meet a comparison ----------------------------------------

const NON_NULL_DEPS = ['a', 'b', 't-a', 't-b'];
const nonNullOutput = fc.record({
  x: fc.integer({ min: -3, max: 3 }),
  f: fc.double({ noNaN: true, noDefaultInfinity: true, min: -2, max: 2 }),
  s: fc.string({ maxLength: 3 }),
  ok: fc.boolean(),
  l: fc.array(fc.integer({ min: -2, max: 2 }), { minLength: 1, maxLength: 3 }),
  d: fc.record({ k: fc.integer({ min: 0, max: 2 }) }),
});
const nonNullInputs = fc.record(Object.fromEntries(NON_NULL_DEPS.map((name) => [name, nonNullOutput])));
const nonNullPath = fc.constantFrom('.x', '.f', '.s', '.ok', '.l', '.l[0]', '.l[-1]', '.d', '.d.k', '["s"]');
const nonNullReference = fc
  .tuple(fc.constantFrom('inputs.a', 'inputs["b"]', 'inputs["t-a"]'), nonNullPath)
  .map(([root, rest]) => root + rest);
const nonNullLiteral = fc.oneof(
  fc.integer({ min: -3, max: 3 }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -2, max: 2 }).map(String),
  fc.string({ maxLength: 2 }).map((text) => JSON.stringify(text)),
  fc.constantFrom('True', 'False', '[]', '()', '[1, "x"]', '(0,)', '"k"'),
);
const nonNullAggregate = fc
  .tuple(
    fc.constantFrom('all', 'any', 'count', 'almost_all'),
    nonNullPath,
    compareOperator,
    fc.oneof(nonNullLiteral, nonNullReference),
    fc.nat(2),
  )
  .map(([fn, rest, op, right, k]) => {
    const argument = `inputs["t-*"]${rest} ${op} ${right}`;
    return fn === 'almost_all' ? `almost_all(${argument}, ${k})` : `${fn}(${argument})`;
  });
const { nonNull } = fc.letrec<{ nonNull: string }>((tie) => ({
  nonNull: fc.oneof(
    { depthSize: 'small', maxDepth: 5 },
    nonNullReference,
    nonNullLiteral,
    nonNullAggregate,
    tie('nonNull').map((e) => `not (${e})`),
    fc.tuple(tie('nonNull'), fc.constantFrom('and', 'or'), tie('nonNull')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
    fc
      .tuple(tie('nonNull'), fc.array(fc.tuple(compareOperator, tie('nonNull')), { minLength: 1, maxLength: 2 }))
      .map(([first, rest]) => [`(${first})`, ...rest.map(([op, e]) => `${op} (${e})`)].join(' ')),
  ),
}));

describe('without nulls', () => {
  it('gives exactly the two-valued result: the same truth, or the same error', () => {
    fc.assert(
      fc.property(
        fc.tuple(nonNull, fc.constantFrom('and', 'or'), nonNullReference).map(([e, op, ref]) => `(${e}) ${op} ${ref}`),
        nonNullInputs,
        (source, inputs) => {
          const compiled = compileCondition(source, NON_NULL_DEPS);
          if (!compiled.ok) throw new Error(`generated condition did not compile: ${source}`);
          const before = evaluateTwoValued(compiled.value, inputs);
          const now = evaluateCondition(compiled.value, inputs);
          if (before.ok) expect(now).toMatchObject({ ok: true, truth: before.value, value: before.value });
          else expect(now).toEqual(before);
        },
      ),
      { numRuns: 1000 },
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
