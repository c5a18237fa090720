/**
 * Every failure that crosses a port is a {@link JobqError} with one of these codes. Adapters
 * translate their SDK's errors in one place each; services decide what to do from `code` and
 * `retryable`, never from an SDK's message text.
 */
export const JOBQ_ERROR_CODES = [
  /** The message's lock (Service Bus) or pop receipt (Storage Queue) is no longer held. */
  'lock-lost',
  /** A message exceeds the backend's size limit; nothing was sent. */
  'message-too-large',
  /** The workflow, blob, queue or message does not exist. */
  'not-found',
  /** A conditional write lost (ETag mismatch) or the thing already exists. */
  'conflict',
  /** Someone else holds the coordinator lease. */
  'lease-held',
  /** The coordinator lease could not be renewed or was broken: stop writing. */
  'lease-lost',
  /** The service could not be reached or answered with a server error. */
  'unavailable',
  /** A call did not finish within its time limit. */
  'timeout',
  /** The service asked us to slow down. */
  'throttled',
  /** Credentials were refused or lack a permission. */
  'auth',
  /** Configuration that cannot work (bad account, prefix, endpoint). */
  'invalid-config',
  /** An argument a caller should not have passed. */
  'invalid-argument',
  /** Stored data failed a check (md5 mismatch, undecodable). */
  'corrupt',
  /**
   * Stored data was written by a newer jobq: a format version this one does not know. It is left
   * as it is (never rewritten, never set aside); upgrade this process to read it.
   */
  'unsupported',
  /** The caller's abort signal fired. */
  'aborted',
  /** Anything else: a bug or an unexpected answer. */
  'internal',
] as const;

/** A stable error code. */
export type JobqErrorCode = (typeof JOBQ_ERROR_CODES)[number];

const RETRYABLE_BY_DEFAULT = new Set<JobqErrorCode>(['unavailable', 'timeout', 'throttled']);

/** Options of {@link JobqError}. */
export interface JobqErrorOptions {
  /** Overrides the default: `unavailable`, `timeout` and `throttled` are retryable, the rest not. */
  retryable?: boolean;
  cause?: unknown;
  /** Safe, structured context (never secrets): e.g. `{ queue: 'gpu', statusCode: 412 }`. */
  details?: Readonly<Record<string, string | number | boolean | null>>;
}

/** The one error type of jobq's ports. */
export class JobqError extends Error {
  readonly code: JobqErrorCode;
  readonly retryable: boolean;
  readonly details: Readonly<Record<string, string | number | boolean | null>>;

  constructor(code: JobqErrorCode, message: string, options: JobqErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'JobqError';
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT.has(code);
    this.details = options.details ?? {};
  }
}

/** True when `error` is a {@link JobqError} (of `code`, when given). Works across package copies. */
export function isJobqError(error: unknown, code?: JobqErrorCode): error is JobqError {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; code?: unknown; retryable?: unknown };
  const shaped = e.name === 'JobqError' && typeof e.code === 'string' && typeof e.retryable === 'boolean';
  return shaped && (code === undefined || e.code === code);
}
