import { JobqError, isJobqError, type JobqErrorCode } from '@jobq/ports';

/** What was being done, for the error message: never a URL, key or SAS. */
export interface StoreErrorContext {
  /** e.g. `save workflow "wf1"`. */
  operation: string;
  /** True when the caller's own abort signal fired (as opposed to our time limit). */
  callerAborted?: boolean;
  /** How to read a 404 / 409 / 412 for this operation, when it means something specific. */
  notFound?: JobqErrorCode;
  conflict?: JobqErrorCode;
}

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  statusCode?: unknown;
  details?: { errorCode?: unknown; odataError?: { code?: unknown } };
}

function serviceCodeOf(e: SdkErrorShape): string | undefined {
  const candidates = [e.details?.errorCode, e.details?.odataError?.code, e.code];
  return candidates.find((c): c is string => typeof c === 'string');
}

/**
 * The one place where blob and table SDK errors become {@link JobqError}s. Messages are built from
 * the status, the service's error code and the context only: SDK messages can quote request URLs
 * (with a SAS), so none of their text is copied and the SDK error is not kept as `cause`.
 */
export function translateStoreError(error: unknown, context: StoreErrorContext): JobqError {
  if (isJobqError(error)) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorShape;
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const serviceCode = serviceCodeOf(e);
  const make = (code: JobqErrorCode, why: string) =>
    new JobqError(code, `${context.operation} failed: ${why}`, {
      details: { operation: context.operation, statusCode: status ?? null, serviceCode: serviceCode ?? null },
    });
  if (e.name === 'AbortError') {
    return context.callerAborted ? make('aborted', 'aborted by the caller') : make('timeout', 'no answer within the time limit');
  }
  if (status === undefined) {
    return make('unavailable', `the storage service could not be reached (${serviceCode ?? (typeof e.name === 'string' ? e.name : 'unknown error')})`);
  }
  if (status === 404) return make(context.notFound ?? 'not-found', `not found (${serviceCode ?? 404})`);
  if (status === 409 && serviceCode === 'LeaseAlreadyPresent') return make('lease-held', 'the lease is held by someone else');
  if (status === 409 || status === 412) return make(context.conflict ?? 'conflict', `changed by someone else or already there (${serviceCode ?? status})`);
  if (status === 401 || status === 403) return make('auth', `access denied (${serviceCode ?? status}); check the credential and its role on the account`);
  if (status === 413) return make('invalid-argument', `request too large (${serviceCode ?? 413})`);
  if (status === 429 || status === 503) return make('throttled', `the service is busy (${serviceCode ?? status})`);
  if (status >= 500) return make('unavailable', `server error ${status} (${serviceCode ?? 'no code'})`);
  if (status === 400) return make('invalid-argument', `bad request (${serviceCode ?? 400})`);
  return make('internal', `unexpected answer ${status} (${serviceCode ?? 'no code'})`);
}

/** Options every store call accepts. */
export interface CallOptions {
  abortSignal?: AbortSignal;
}

/**
 * Runs one SDK call under a time limit and the caller's signal, translating its errors. Every SDK
 * call of the store goes through here.
 */
export async function storeCall<T>(
  context: Omit<StoreErrorContext, 'callerAborted'>,
  timeoutInMs: number,
  options: CallOptions | undefined,
  fn: (abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  const caller = options?.abortSignal;
  if (caller?.aborted) throw new JobqError('aborted', `${context.operation} was aborted by the caller`);
  const signal = caller ? AbortSignal.any([caller, AbortSignal.timeout(timeoutInMs)]) : AbortSignal.timeout(timeoutInMs);
  try {
    return await fn(signal);
  } catch (error) {
    throw translateStoreError(error, { ...context, callerAborted: caller?.aborted ?? false });
  }
}
