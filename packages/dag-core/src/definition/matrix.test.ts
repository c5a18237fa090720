import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { compileCondition, evaluateCondition, fnmatch } from '../condition';
import { conditionLiteral } from '../condition/literal';
import { expandMatrix, matrixNameValue } from './matrix';
import type { ParamValue } from './params';

/** Values with the characters a task name or a glob cares about. */
const value: fc.Arbitrary<ParamValue> = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(0.5, 1e-7, true, false),
  fc.string({ unit: fc.constantFrom('a', 'B', '1', '*', '?', '[', ']', '/', ',', '=', '(', ')', ' ', '%', '.', 'ü', '\n'), maxLength: 4 }),
);

/** 1–3 axes named a0…, each with 1–4 distinct values. */
const axes = fc
  .array(fc.uniqueArray(value, { minLength: 1, maxLength: 4, comparator: 'SameValueZero' }), { minLength: 1, maxLength: 3 })
  .map((lists) => Object.fromEntries(lists.map((list, i) => [`a${i}`, list])) as Record<string, ParamValue[]>);

function product(matrix: Record<string, ParamValue[]>): Array<Record<string, ParamValue>> {
  let out: Array<Record<string, ParamValue>> = [{}];
  for (const [key, values] of Object.entries(matrix)) out = out.flatMap((c) => values.map((v) => ({ ...c, [key]: v })));
  return out;
}

describe('expandMatrix', () => {
  it('makes (product of the axes − excluded + includes that fit no combination) tasks, with unique names free of glob characters after the base name', () => {
    const scenario = axes.chain((matrix) => {
      const combos = product(matrix);
      // Excludes: sub-combinations picked from the product (some keys only), so they match something.
      const exclude = fc.array(
        fc
          .tuple(fc.nat({ max: combos.length - 1 }), fc.subarray(Object.keys(matrix), { minLength: 1 }))
          .map(([i, keys]) => Object.fromEntries(keys.map((k) => [k, combos[i]![k]!]))),
        { maxLength: 3 },
      );
      // Includes that fit no combination (an axis value no axis has) and ones that only add a key.
      const include = fc.array(
        fc.oneof(
          fc.nat({ max: 99 }).map((n) => ({ a0: `new${n}` })),
          fc.nat({ max: 99 }).map((n) => ({ [`extra${n}`]: n })),
        ),
        { maxLength: 3 },
      );
      return fc.record({ matrix: fc.constant(matrix), exclude, include });
    });
    fc.assert(
      fc.property(scenario, ({ matrix, exclude, include }) => {
        const result = expandMatrix('train', { ...matrix, exclude, include }, ['tasks', 0, 'matrix']);
        const kept = product(matrix).filter((c) => !exclude.some((e) => Object.entries(e).every(([k, v]) => c[k] === v)));
        const fresh = include.filter((e) => 'a0' in e);
        const newA0 = new Set(fresh.map((e) => e.a0));
        // With no combination left, an include that only adds a key fits none either: it is a task of its own.
        const expected = kept.length + (kept.length === 0 ? include.length : newA0.size);
        // Refused, never thrown: nothing left; two kept combinations that read the same in a name (1 and "1"
        // of one axis, unless an exclude removed one of them); two identical entries that each make a task of their own.
        const nameOf = (c: Record<string, ParamValue>): string =>
          Object.keys(matrix)
            .map((k) => matrixNameValue(c[k]!))
            .join('\u0000');
        const clash = new Set(kept.map(nameOf)).size < kept.length;
        const twins = kept.length === 0 ? new Set(include.map((e) => JSON.stringify(e))).size < include.length : newA0.size < fresh.length;
        if (expected === 0 || clash || twins) {
          expect(result.ok).toBe(false);
          return;
        }
        if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('; '));
        const names = result.value.combinations.map((c) => c.name);
        expect(names).toHaveLength(expected);
        expect(new Set(names).size).toBe(names.length);
        for (const name of names) {
          expect(name.startsWith('train(') && name.endsWith(')')).toBe(true);
          expect(/[*?[\]/\s]/.test(name.slice('train'.length))).toBe(false);
          expect(fnmatch(name, 'train(*')).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('writes two different values as two different name parts', () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        if (typeof a === typeof b && a !== b) expect(matrixNameValue(a)).not.toBe(matrixNameValue(b));
      }),
      { numRuns: 500 },
    );
  });
});

describe('conditionLiteral', () => {
  it('is read back by a condition as the same value, whatever a string holds', () => {
    const scalar = fc.oneof(
      fc.string(),
      fc.string({ unit: fc.constantFrom("'", '"', '\\', '\n', ' or True', 'x', '\u0000', '\u2028') }),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(),
      fc.boolean(),
    );
    fc.assert(
      fc.property(scalar, (v) => {
        const compiled = compileCondition(`inputs.a.v == ${conditionLiteral(v)}`, ['a']);
        if (!compiled.ok) throw new Error(`${conditionLiteral(v)}: ${compiled.issues[0]?.message}`);
        expect(evaluateCondition(compiled.value, { a: { v } })).toMatchObject({ ok: true, value: true });
        expect(evaluateCondition(compiled.value, { a: { v: typeof v === 'string' ? `${v}!` : String(v) } })).toMatchObject({
          ok: true,
          value: false,
        });
      }),
      { numRuns: 500 },
    );
  });
});
