import { describe, expect, it } from '@jest/globals';
import { translateError } from './errors';

/** A queue SDK error as storage-queue throws it (a RestError: status, code, details.errorCode). */
function queueError(statusCode: number, code?: string): unknown {
  return { name: 'RestError', statusCode, ...(code === undefined ? {} : { code, details: { errorCode: code } }) };
}

function mapped(error: unknown) {
  const e = translateError(error, { operation: 'send', queue: 'q' });
  return { code: e.code, retryable: e.retryable, message: e.message };
}

describe('translateError: 409 and 412', () => {
  it('reads a 412 and a 409 *AlreadyExists as conflict', () => {
    expect(mapped(queueError(412, 'ConditionNotMet'))).toMatchObject({ code: 'conflict', retryable: false });
    expect(mapped(queueError(409, 'QueueAlreadyExists'))).toMatchObject({ code: 'conflict', retryable: false });
  });

  it('reads a full emulator as a retryable unavailable that says so', () => {
    const e = mapped(queueError(409, 'MemoryExtentStoreAtSizeLimit'));
    expect(e).toMatchObject({ code: 'unavailable', retryable: true });
    expect(e.message).toContain("the storage emulator's memory is full (409 MemoryExtentStoreAtSizeLimit)");
  });

  it('reads QueueBeingDeleted as a retryable unavailable', () => {
    expect(mapped(queueError(409, 'QueueBeingDeleted'))).toMatchObject({ code: 'unavailable', retryable: true });
  });

  it('gives any other 409 a non-conflict code naming the service code', () => {
    expect(mapped(queueError(409, 'QueueNotEmpty'))).toMatchObject({
      code: 'internal',
      retryable: false,
      message: 'send on queue "q" failed: the service refused it (409 QueueNotEmpty)',
    });
    expect(mapped(queueError(409))).toMatchObject({ code: 'internal', retryable: false });
  });
});
