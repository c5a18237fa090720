import { describe, expect, it } from '@jest/globals';
import { JOBQ_ERROR_CODES, JobqError, isJobqError } from './errors';

describe('JobqError', () => {
  it('is retryable by default only for unavailable, timeout and throttled', () => {
    const retryable = JOBQ_ERROR_CODES.filter((code) => new JobqError(code, 'x').retryable);
    expect(retryable).toEqual(['unavailable', 'timeout', 'throttled']);
    expect(new JobqError('conflict', 'x', { retryable: true }).retryable).toBe(true);
  });

  it('has a code for data written by a newer jobq, apart from corrupt data', () => {
    expect(JOBQ_ERROR_CODES).toContain('unsupported');
    expect(new JobqError('unsupported', 'format version 3').retryable).toBe(false);
  });

  it('keeps code, message, cause and details', () => {
    const cause = new Error('socket hang up');
    const error = new JobqError('unavailable', 'queue "gpu" unreachable', { cause, details: { queue: 'gpu' } });
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'JobqError', code: 'unavailable', message: 'queue "gpu" unreachable', details: { queue: 'gpu' } });
    expect(error.cause).toBe(cause);
  });

  it('is recognised by the guard, by code, and not confused with other errors', () => {
    const error = new JobqError('lock-lost', 'gone');
    expect(isJobqError(error)).toBe(true);
    expect(isJobqError(error, 'lock-lost')).toBe(true);
    expect(isJobqError(error, 'conflict')).toBe(false);
    expect(isJobqError(new Error('lock-lost'))).toBe(false);
    expect(isJobqError({ name: 'JobqError', code: 'x' })).toBe(false);
    expect(isJobqError(null)).toBe(false);
    // A copy from another instance of the package (same shape) still counts.
    expect(isJobqError({ name: 'JobqError', code: 'timeout', retryable: true, message: 'm' })).toBe(true);
  });
});
