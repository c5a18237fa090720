import { JobqError } from './errors';
import { describeError, errorMessage, listSome } from './text';

describe('errorMessage', () => {
  it('gives the message of an error, its name when the message is empty, a string as it is, anything else as JSON', () => {
    expect(errorMessage(new Error('disk full'))).toBe('disk full');
    expect(errorMessage(new TypeError(''))).toBe('TypeError');
    expect(errorMessage({ name: 'RemoteError', message: 'from another realm' })).toBe('from another realm');
    expect(errorMessage('plain text')).toBe('plain text');
    expect(errorMessage({ status: 503 })).toBe('{"status":503}');
    expect(errorMessage(undefined)).toBe('undefined');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(errorMessage(cyclic)).toBe('[object Object]');
  });

  it('puts the code of a jobq error in front with describeError', () => {
    expect(describeError(new JobqError('not-found', 'workflow "x" does not exist'))).toBe('not-found: workflow "x" does not exist');
    expect(describeError(new Error('boom'))).toBe('boom');
  });
});

describe('listSome', () => {
  it('joins the first items and says how many more there are', () => {
    expect(listSome(['a', 'b', 'c', 'd', 'e'], 3)).toBe('a, b, c and 2 more');
    expect(listSome(['a', 'b', 'c'], 3)).toBe('a, b, c');
    expect(listSome([], 3)).toBe('');
    expect(listSome([1, 2, 3], 1, (n) => `#${n}`)).toBe('#1 and 2 more');
  });
});
