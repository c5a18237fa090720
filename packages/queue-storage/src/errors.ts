import { JobqError, isJobqError, type JobqErrorCode } from '@jobq/ports';

/** What was being done, for the error message: never a URL, key or SAS. */
export interface ErrorContext {
  operation: string;
  queue: string;
  /** The message operations read 404 and pop-receipt mismatches as a lost lock. */
  messageOperation?: boolean;
  /** True when the caller's own abort signal fired (as opposed to our time limit). */
  callerAborted?: boolean;
}

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  statusCode?: unknown;
  details?: { errorCode?: unknown };
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'REQUEST_SEND_ERROR',
  'UND_ERR_SOCKET',
]);

function errorCodeOf(error: SdkErrorShape): string | undefined {
  const fromDetails = error.details?.errorCode;
  if (typeof fromDetails === 'string') return fromDetails;
  return typeof error.code === 'string' ? error.code : undefined;
}

/**
 * A 409 by its service code. Only `*AlreadyExists` (a create race) is `conflict`. A full emulator
 * (Azurite keeps message bodies in memory, up to a cap) and a queue being deleted are retryable
 * `unavailable`; any other 409 is an `internal` error naming its code.
 */
function conflictOf(serviceCode: string | undefined, make: (code: JobqErrorCode, why: string) => JobqError): JobqError {
  if (serviceCode?.endsWith('AlreadyExists')) return make('conflict', `already there (${serviceCode})`);
  if (serviceCode === 'MemoryExtentStoreAtSizeLimit') {
    return make(
      'unavailable',
      `the storage emulator's memory is full (409 ${serviceCode}): it keeps blob contents and message bodies in memory up to a cap`,
    );
  }
  if (serviceCode?.endsWith('BeingDeleted'))
    return make('unavailable', `the queue is being deleted (409 ${serviceCode}); try again once the deletion is over`);
  return make('internal', `the service refused it (409 ${serviceCode ?? 'without a code'})`);
}

/**
 * The one place where Storage Queue SDK errors become {@link JobqError}s. The message is built from
 * the status, the service's error code and the context only: SDK messages can quote request URLs,
 * so none of their text is copied, and the SDK error is not kept as `cause`.
 */
export function translateError(error: unknown, context: ErrorContext): JobqError {
  if (isJobqError(error)) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorShape;
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const serviceCode = errorCodeOf(e);
  const where = `${context.operation} on queue "${context.queue}"`;
  const make = (code: JobqErrorCode, why: string) =>
    new JobqError(code, `${where} failed: ${why}`, {
      details: { queue: context.queue, operation: context.operation, statusCode: status ?? null, serviceCode: serviceCode ?? null },
    });

  if (e.name === 'AbortError') {
    return context.callerAborted ? make('aborted', 'aborted by the caller') : make('timeout', 'no answer within the time limit');
  }
  if (status === undefined) {
    if (serviceCode !== undefined && NETWORK_CODES.has(serviceCode))
      return make('unavailable', `the storage service could not be reached (${serviceCode})`);
    return make(
      'unavailable',
      `the storage service could not be reached (${serviceCode ?? (typeof e.name === 'string' ? e.name : 'unknown error')})`,
    );
  }
  if (context.messageOperation && (status === 404 || serviceCode === 'PopReceiptMismatch' || serviceCode === 'MessageNotFound')) {
    return make('lock-lost', 'the message is no longer held under this lock (completed, or delivered again)');
  }
  if (status === 413 || serviceCode === 'RequestBodyTooLarge' || serviceCode === 'MessageTooLarge')
    return make('message-too-large', 'the message is larger than 64 KiB');
  if (status === 404)
    return make('not-found', serviceCode === 'QueueNotFound' ? 'the queue does not exist' : `not found (${serviceCode ?? 404})`);
  if (status === 401 || status === 403)
    return make('auth', `access denied (${serviceCode ?? status}); check the credential and its role on the account`);
  if (status === 412) return make('conflict', `a condition of the request failed (${serviceCode ?? 412})`);
  if (status === 409) return conflictOf(serviceCode, make);
  if (status === 429 || status === 503) return make('throttled', `the service is busy (${serviceCode ?? status})`);
  if (status >= 500) return make('unavailable', `server error ${status} (${serviceCode ?? 'no code'})`);
  if (status === 400) return make('invalid-argument', `bad request (${serviceCode ?? 400})`);
  return make('internal', `unexpected answer ${status} (${serviceCode ?? 'no code'})`);
}
