import { describe, expect, it } from '@jest/globals';
import { windowRows } from './vlist';
import { edgePath, fitLabel } from './graph/paint';

describe('the group list window', () => {
  it('renders the rows in view and a few either side, never past the ends', () => {
    expect(windowRows(0, 10_000, 28, 16, 5)).toEqual({ first: 0, last: 21 });
    expect(windowRows(28 * 5000, 10_000, 28, 16, 5)).toEqual({ first: 4995, last: 5021 });
    expect(windowRows(28 * 9990, 10_000, 28, 16, 5)).toEqual({ first: 9985, last: 10_000 });
    expect(windowRows(0, 3, 28, 16, 5)).toEqual({ first: 0, last: 3 });
  });
});

describe('node drawing helpers', () => {
  it('cuts long labels with an ellipsis', () => {
    expect(fitLabel('short')).toBe('short');
    expect(fitLabel('a'.repeat(30), 25)).toBe(`${'a'.repeat(24)}…`);
  });

  it('draws an edge from the right edge of one node to the left edge of the next', () => {
    expect(edgePath(0, 0, 290, 54)).toBe('M200 20C245 20 245 74 290 74');
  });
});
