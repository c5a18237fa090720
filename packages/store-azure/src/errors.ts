import { JobqError, isJobqError, type JobqErrorCode } from '@jobq/ports';

/** What was being done, for the error message: never a URL, key or SAS. */
export interface StoreErrorContext {
  /** e.g. `save workflow "wf1"`. */
  operation: string;
  /** True when the caller's own abort signal fired (as opposed to our time limit). */
  callerAborted?: boolean;
  /** How to read a 404, or a precondition failure (412, 409 `*AlreadyExists` / `Lease*`), for this operation, when it means something specific. */
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

/** The extent store of the storage emulator (Azurite) is full: it keeps blob contents in memory, up to a cap. */
export const EMULATOR_MEMORY_FULL = 'MemoryExtentStoreAtSizeLimit';

/**
 * A 409 by its service code. Only precondition failures are `conflict` (or the caller's reading of
 * one): `*AlreadyExists` (a create race) and the `Lease*` codes (the lease is not in the state the
 * call needs); `LeaseAlreadyPresent` is `lease-held`. A full emulator and a container or table
 * being deleted are retryable `unavailable`; any other 409 is an `internal` error naming its code,
 * so that no caller mistakes it for a write race and loops.
 */
function conflictOf(
  serviceCode: string | undefined,
  context: StoreErrorContext,
  make: (code: JobqErrorCode, why: string) => JobqError,
): JobqError {
  if (serviceCode === 'LeaseAlreadyPresent') return make('lease-held', 'the lease is held by someone else');
  if (serviceCode !== undefined && (serviceCode.endsWith('AlreadyExists') || serviceCode.startsWith('Lease'))) {
    return make(context.conflict ?? 'conflict', `changed by someone else or already there (${serviceCode})`);
  }
  if (serviceCode === EMULATOR_MEMORY_FULL) {
    return make(
      'unavailable',
      `the storage emulator's blob memory is full (409 ${serviceCode}): it keeps blob contents in memory up to a cap; delete workflows or restart it with a larger cap`,
    );
  }
  if (serviceCode?.endsWith('BeingDeleted'))
    return make('unavailable', `it is being deleted (409 ${serviceCode}); try again once the deletion is over`);
  return make('internal', `the service refused it (409 ${serviceCode ?? 'without a code'})`);
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
    return make(
      'unavailable',
      `the storage service could not be reached (${serviceCode ?? (typeof e.name === 'string' ? e.name : 'unknown error')})`,
    );
  }
  if (status === 404) return make(context.notFound ?? 'not-found', `not found (${serviceCode ?? 404})`);
  if (status === 409) return conflictOf(serviceCode, context, make);
  if (status === 412) return make(context.conflict ?? 'conflict', `changed by someone else (${serviceCode ?? 412})`);
  if (status === 401 || status === 403)
    return make('auth', `access denied (${serviceCode ?? status}); check the credential and its role on the account`);
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
