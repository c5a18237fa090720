import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { compareCodeUnits, fnmatch, matchingNames } from './glob';

describe('fnmatch', () => {
  it.each([
    ['train-a', 'train-*', true],
    ['train-', 'train-*', true],
    ['prep/a/b', 'prep/*', true],
    ['prep/a/b', '*b', true],
    ['xtrain-a', 'train-*', false],
    ['Train-a', 'train-*', false],
    ['a', '?', true],
    ['ab', '?', false],
    ['', '?', false],
    ['', '*', true],
    ['😀', '?', true],
    ['t1', 't[0-9]', true],
    ['tx', 't[0-9]', false],
    ['tb', 't[abc]', true],
    ['tb', 't[!abc]', false],
    ['tx', 't[!abc]', true],
    ['t]', 't[]]', true],
    ['tx', 't[!]]', true],
    ['t]', 't[!]]', false],
    ['t-', 't[a-]', true],
    ['tb', 't[z-a]', false],
    ['a[b', 'a[b', true],
    ['a[bc', 'a[b*', true],
    ['abc', 'a*c', true],
    ['abcbd', 'a*b?', true],
    ['aXbXc', '*X*X*', true],
    ['aXb', '*X*X*', false],
  ])('fnmatch(%j, %j) is %j', (name, pattern, expected) => {
    expect(fnmatch(name, pattern)).toBe(expected);
  });

  it('stays fast on patterns that make backtracking regex engines explode', () => {
    expect(fnmatch('a'.repeat(5000), `${'*a'.repeat(50)}b`)).toBe(false);
  });

  it('matches every name against itself when it holds no special characters', () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !/[*?[]/.test(s)),
        (name) => fnmatch(name, name),
      ),
      { numRuns: 200 },
    );
  });
});

describe('matchingNames', () => {
  it('returns distinct matches in code-unit order', () => {
    expect(matchingNames('t-*', ['t-b', 'x', 't-a', 't-B', 't-b', 't-é'])).toEqual(['t-B', 't-a', 't-b', 't-é']);
  });

  it('returns nothing when nothing matches', () => {
    expect(matchingNames('zz-*', ['a', 'b'])).toEqual([]);
  });

  it('orders by code units, not by locale', () => {
    expect(['b', 'B', 'a', '_'].sort(compareCodeUnits)).toEqual(['B', '_', 'a', 'b']);
  });
});
