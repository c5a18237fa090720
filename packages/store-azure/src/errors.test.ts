import { describe, expect, it } from '@jest/globals';
import { translateStoreError } from './errors';

/** A blob SDK error as storage-blob throws it (a RestError: status, code, details.errorCode). */
function blobError(statusCode: number, code?: string): unknown {
  return { name: 'RestError', statusCode, ...(code === undefined ? {} : { code, details: { errorCode: code } }) };
}

/** A table SDK error as data-tables throws it (the code in details.odataError). */
function tableError(statusCode: number, code: string): unknown {
  return { name: 'RestError', statusCode, details: { odataError: { code } } };
}

function mapped(error: unknown, context: Partial<Parameters<typeof translateStoreError>[1]> = {}) {
  const e = translateStoreError(error, { operation: 'save workflow "wf"', ...context });
  return { code: e.code, retryable: e.retryable, message: e.message };
}

describe('translateStoreError: 409 and 412', () => {
  it('reads a 412 and a 409 *AlreadyExists (create races) as conflict, or as the caller says', () => {
    expect(mapped(blobError(412, 'ConditionNotMet'))).toMatchObject({ code: 'conflict', retryable: false });
    expect(mapped(blobError(412))).toMatchObject({ code: 'conflict' });
    for (const code of ['BlobAlreadyExists', 'ContainerAlreadyExists'])
      expect(mapped(blobError(409, code))).toMatchObject({ code: 'conflict' });
    for (const code of ['EntityAlreadyExists', 'TableAlreadyExists'])
      expect(mapped(tableError(409, code))).toMatchObject({ code: 'conflict' });
    expect(mapped(blobError(412, 'LeaseLost'), { conflict: 'lease-lost' })).toMatchObject({ code: 'lease-lost' });
    expect(mapped(blobError(409, 'BlobAlreadyExists'), { conflict: 'lease-lost' })).toMatchObject({ code: 'lease-lost' });
    expect(mapped(blobError(404, 'BlobNotFound'), { notFound: 'lease-lost' })).toMatchObject({ code: 'lease-lost' });
  });

  it('keeps the lease codes: LeaseAlreadyPresent is lease-held, the other Lease* 409s are precondition failures', () => {
    expect(mapped(blobError(409, 'LeaseAlreadyPresent'))).toMatchObject({ code: 'lease-held', retryable: false });
    expect(mapped(blobError(409, 'LeaseNotPresentWithLeaseOperation'))).toMatchObject({ code: 'conflict' });
    expect(mapped(blobError(409, 'LeaseIdMismatchWithLeaseOperation'), { conflict: 'lease-lost' })).toMatchObject({ code: 'lease-lost' });
    expect(mapped(blobError(409, 'LeaseIsBrokenAndCannotBeRenewed'), { conflict: 'lease-lost' })).toMatchObject({ code: 'lease-lost' });
  });

  it('reads a full emulator (409 MemoryExtentStoreAtSizeLimit) as a retryable unavailable that says so, never as a write race', () => {
    const e = mapped(blobError(409, 'MemoryExtentStoreAtSizeLimit'), { conflict: 'lease-lost' });
    expect(e).toMatchObject({ code: 'unavailable', retryable: true });
    expect(e.message).toBe(
      'save workflow "wf" failed: the storage emulator\'s blob memory is full (409 MemoryExtentStoreAtSizeLimit): it keeps blob contents in memory up to a cap; delete workflows or restart it with a larger cap',
    );
  });

  it('reads *BeingDeleted as a retryable unavailable', () => {
    expect(mapped(blobError(409, 'ContainerBeingDeleted'))).toMatchObject({ code: 'unavailable', retryable: true });
    expect(mapped(tableError(409, 'TableBeingDeleted'))).toMatchObject({ code: 'unavailable', retryable: true });
  });

  it('gives any other 409 a non-conflict, non-retryable code naming the service code', () => {
    for (const code of ['BlobArchived', 'OperationNotAllowedOnIncrementalCopyBlob', 'SnapshotsPresent']) {
      const e = mapped(blobError(409, code), { conflict: 'lease-lost' });
      expect(e).toMatchObject({ code: 'internal', retryable: false });
      expect(e.message).toContain(`409 ${code}`);
    }
    expect(mapped(blobError(409))).toMatchObject({
      code: 'internal',
      message: 'save workflow "wf" failed: the service refused it (409 without a code)',
    });
  });
});
