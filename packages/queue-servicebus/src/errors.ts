import { JobqError, isJobqError, type JobqErrorCode } from '@jobq/ports';

/** What was being done, for the error message: never a connection string, key or token. */
export interface ErrorContext {
  operation: string;
  queue: string;
  /** True when the caller's own abort signal fired (as opposed to a time limit). */
  callerAborted?: boolean;
}

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  statusCode?: unknown;
  retryable?: unknown;
  syscall?: unknown;
}

/** `ServiceBusError` codes of the SDK and the jobq code each becomes. */
const BY_SERVICE_BUS_CODE: Readonly<Record<string, { code: JobqErrorCode; why: string }>> = {
  MessageLockLost: { code: 'lock-lost', why: 'the message is no longer held under this lock (completed, expired, or delivered again)' },
  MessageNotFound: { code: 'lock-lost', why: 'the message is no longer there' },
  MessagingEntityNotFound: { code: 'not-found', why: 'the queue does not exist' },
  MessagingEntityDisabled: { code: 'unavailable', why: 'the queue is disabled' },
  MessageSizeExceeded: { code: 'message-too-large', why: 'the message is larger than the queue accepts' },
  ServiceBusy: { code: 'throttled', why: 'the service is busy' },
  QuotaExceeded: { code: 'throttled', why: 'a quota of the namespace or queue is exhausted' },
  UnauthorizedAccess: { code: 'auth', why: 'access denied; check the credential and its role on the namespace or queue' },
  ServiceCommunicationProblem: { code: 'unavailable', why: 'the namespace could not be reached' },
  ServiceTimeout: { code: 'timeout', why: 'no answer within the time limit' },
  MessagingEntityAlreadyExists: { code: 'conflict', why: 'the queue already exists' },
};

/** Node's network error codes: the namespace (or its admin endpoint) could not be reached. */
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
]);

/** A code of the SDK that is safe to quote: a short identifier, never free text. */
function safeCode(value: unknown): string | undefined {
  return typeof value === 'string' && /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/.test(value) ? value : undefined;
}

/**
 * The one place where Service Bus SDK errors (`ServiceBusError` from messaging, `RestError` from the
 * administration client) become {@link JobqError}s. The message is built from the error's code,
 * its HTTP status and the context only: no text of the SDK is copied (it can quote hosts, tokens
 * and entity paths), and the SDK error is not kept as `cause`.
 */
export function translateError(error: unknown, context: ErrorContext): JobqError {
  if (isJobqError(error)) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorShape;
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const sdkCode = safeCode(e.code);
  const where = `${context.operation} on Service Bus queue "${context.queue}"`;
  const make = (code: JobqErrorCode, why: string, retryable?: boolean) =>
    new JobqError(
      code,
      `${where} failed: ${why}${sdkCode === undefined ? '' : ` (${sdkCode}${status === undefined ? '' : ` ${status}`})`}`,
      {
        ...(retryable === undefined ? {} : { retryable }),
        details: { queue: context.queue, operation: context.operation, statusCode: status ?? null, serviceCode: sdkCode ?? null },
      },
    );

  if (e.name === 'AbortError') {
    return context.callerAborted ? make('aborted', 'aborted by the caller') : make('timeout', 'no answer within the time limit');
  }
  // A socket error (ECONNREFUSED and the like), which the SDK passes on with the code GeneralError.
  if (typeof e.syscall === 'string') return make('unavailable', 'the namespace could not be reached');
  if ((e.name === 'ServiceBusError' || e.name === 'MessagingError') && sdkCode !== undefined) {
    const known = BY_SERVICE_BUS_CODE[sdkCode];
    if (known) return make(known.code, known.why);
    // GeneralError and the session codes: retryable when the SDK says so.
    return e.retryable === true
      ? make('unavailable', 'the service reported a transient error')
      : make('internal', 'the service reported an error');
  }
  if (status !== undefined) {
    // The administration client (HTTP).
    if (status === 401 || status === 403) {
      if (sdkCode === 'QuotaExceededError') return make('throttled', 'a quota of the namespace is exhausted');
      return make('auth', 'access denied; managing or counting a queue needs the Azure Service Bus Data Owner role (or a Manage SAS rule)');
    }
    if (status === 404) return make('not-found', 'the queue does not exist');
    if (status === 409) return make('conflict', 'the queue already exists or is being changed');
    if (status === 413) return make('message-too-large', 'the request is too large');
    if (status === 429 || status === 503) return make('throttled', 'the service is busy');
    if (status === 408) return make('timeout', 'no answer within the time limit');
    if (status >= 500) return make('unavailable', `server error ${status}`);
    if (status === 400) return make('invalid-argument', 'the service refused the request as invalid');
    return make('internal', `unexpected answer ${status}`);
  }
  if (sdkCode !== undefined && NETWORK_CODES.has(sdkCode)) return make('unavailable', 'the namespace could not be reached');
  if (e.name === 'TypeError' || e.name === 'RangeError') return make('invalid-argument', 'the SDK refused an argument');
  return make('internal', `unexpected error${typeof e.name === 'string' && safeCode(e.name) ? ` ${e.name}` : ''}`);
}
