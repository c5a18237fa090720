import { describe, expect, it } from '@jest/globals';
import { pythonCompare, pythonContains, pythonEquals, pythonType, truthy } from './python';

describe('pythonType', () => {
  it.each([
    [null, 'NoneType'],
    [undefined, 'NoneType'],
    [() => 1, 'NoneType'],
    [true, 'bool'],
    [1, 'int'],
    [1.0, 'int'],
    [1.5, 'float'],
    ['x', 'str'],
    [[], 'list'],
    [{}, 'dict'],
  ])('%p is %s', (value, expected) => {
    expect(pythonType(value)).toBe(expected);
  });
});

describe('truthy', () => {
  it.each([
    [null, false],
    [undefined, false],
    [false, false],
    [true, true],
    [0, false],
    [0.0, false],
    [-0, false],
    [2, true],
    [-1.5, true],
    [NaN, true],
    ['', false],
    ['0', true],
    [[], false],
    [[0], true],
    [{}, false],
    [{ a: null }, true],
  ])('truthy(%p) is %p', (value, expected) => {
    expect(truthy(value)).toBe(expected);
  });
});

describe('pythonEquals', () => {
  it.each([
    [1, 1.0, true],
    [true, 1, true],
    [false, 0, true],
    [true, 2, false],
    ['1', 1, false],
    [null, null, true],
    [null, false, false],
    [null, 0, false],
    ['a', 'a', true],
    [[1, [true, 'x']], [1.0, [1, 'x']], true],
    [[1, 2], [1, 2, 3], false],
    [[1], { 0: 1 }, false],
    [{ a: [1, { b: true }] }, { a: [1, { b: 1 }] }, true],
    [{ a: 1 }, { a: 1, b: 2 }, false],
    [{ a: 1, b: null }, { a: 1, c: null }, false],
    [{ a: undefined }, { a: null }, true],
  ])('%j == %j is %p', (a, b, expected) => {
    expect(pythonEquals(a, b)).toBe(expected);
    expect(pythonEquals(b, a)).toBe(expected);
  });

  it('raises instead of overflowing the stack on very deep values', () => {
    let deep: unknown = [];
    for (let i = 0; i < 5000; i += 1) deep = [deep];
    expect(() => pythonEquals(deep, deep)).toThrow('nested too deeply');
  });
});

describe('pythonCompare', () => {
  it('orders numbers and booleans together', () => {
    expect(pythonCompare('<', 1, 2)).toBe(true);
    expect(pythonCompare('<', false, true)).toBe(true);
    expect(pythonCompare('>=', true, 1)).toBe(true);
    expect(pythonCompare('>', 1.5, true)).toBe(true);
    expect(pythonCompare('<=', 2, 2.0)).toBe(true);
  });

  it('orders strings by code point', () => {
    expect(pythonCompare('<', 'a', 'b')).toBe(true);
    expect(pythonCompare('<', 'B', 'a')).toBe(true);
    expect(pythonCompare('<', 'ab', 'abc')).toBe(true);
    // U+FF61 < U+1F600 by code point, although its UTF-16 code unit is larger.
    expect(pythonCompare('<', '\uff61', '😀')).toBe(true);
  });

  it('orders lists lexicographically by their first unequal pair', () => {
    expect(pythonCompare('<', [1, 2], [1, 3])).toBe(true);
    expect(pythonCompare('<', [1, 2], [1, 2, 0])).toBe(true);
    expect(pythonCompare('<=', [1, 2], [1, 2])).toBe(true);
    expect(pythonCompare('>', [2], [1, 'x'])).toBe(true);
    // Equal leading pairs are skipped even when their types could not be ordered.
    expect(pythonCompare('<', [null, 1], [null, 2])).toBe(true);
    expect(() => pythonCompare('<', [1, 'a'], [1, 2])).toThrow('cannot compare str and int with <');
  });

  it.each([
    [null, 0, 'cannot compare NoneType and int with >'],
    ['x', 1, 'cannot compare str and int with >'],
    [1.5, 'x', 'cannot compare float and str with >'],
    [{}, {}, 'cannot compare dict and dict with >'],
    [[1], 1, 'cannot compare list and int with >'],
    [true, null, 'cannot compare bool and NoneType with >'],
  ])('%j > %j raises', (a, b, message) => {
    expect(() => pythonCompare('>', a, b)).toThrow(message);
  });
});

describe('pythonContains', () => {
  it('tests substrings, requiring a string on the left', () => {
    expect(pythonContains('hello', 'ell')).toBe(true);
    expect(pythonContains('hello', '')).toBe(true);
    expect(pythonContains('hello', 'x')).toBe(false);
    expect(() => pythonContains('hello', 1)).toThrow("'in <string>' requires string as left operand, not int");
  });

  it('tests list membership with Python equality', () => {
    expect(pythonContains([1, 'a', [2]], 1.0)).toBe(true);
    expect(pythonContains([1, 'a', [2]], true)).toBe(true);
    expect(pythonContains([1, 'a', [2]], [2])).toBe(true);
    expect(pythonContains([1, 'a', [2]], '1')).toBe(false);
    expect(pythonContains([], null)).toBe(false);
  });

  it('tests dict keys; non-string keys are absent, lists and dicts are unhashable', () => {
    expect(pythonContains({ a: 1 }, 'a')).toBe(true);
    expect(pythonContains({ a: 1 }, 'constructor')).toBe(false);
    expect(pythonContains({ 1: 1 }, 1)).toBe(false);
    expect(pythonContains({ a: 1 }, null)).toBe(false);
    expect(() => pythonContains({ a: 1 }, ['a'])).toThrow("unhashable type: 'list'");
    expect(() => pythonContains({ a: 1 }, {})).toThrow("unhashable type: 'dict'");
  });

  it.each([
    [null, "argument of type 'NoneType' is not iterable"],
    [1, "argument of type 'int' is not iterable"],
    [1.5, "argument of type 'float' is not iterable"],
    [true, "argument of type 'bool' is not iterable"],
  ])('raises for a %p container', (container, message) => {
    expect(() => pythonContains(container, 'a')).toThrow(message);
  });
});
