import { JOBQ_ERROR_CODES, JobqError, type JobqErrorCode } from './errors';

/**
 * The wire of the task channel between a worker (`@jobq/worker` serves it) and the processes of its
 * workflow tasks (`@jobq/task` is its client): HTTP/1.1 over the Unix socket named by
 * `JOBQ_TASK_SOCKET`, every request carrying `Authorization: Bearer $JOBQ_TASK_TOKEN`.
 *
 * - `POST /v1/output` `{"ref": "<output ref>"}` → `{"value": <the output>}`: the ref must be one of
 *   this attempt's upstream refs (a direct parent's output); blob refs are downloaded and md5-checked.
 * - `POST /v1/file` `{"marker": {"__jobq_stash__": …}}` → the file's bytes (`Content-Length` = size,
 *   `X-Jobq-Md5` = its base64 md5): the marker must appear in a direct parent's output and name a
 *   file of this workflow.
 * - `PUT /v1/stash?name=FILE[&workflow=ID&task=NAME]` with the file's bytes as the body →
 *   `{"marker": {"__jobq_stash__": …}}`: stashes the bytes for this attempt's workflow and task.
 *
 * Errors are `{"error": {"code": "<JobqError code>", "message": "<one line>", "retryable": bool}}`:
 * 401 for a missing or wrong token, 403 for anything the attempt may not do or ask.
 */
export const TASK_SOCKET_VARIABLE = 'JOBQ_TASK_SOCKET';
/** The per-attempt token (hex) the channel requires on every request. */
export const TASK_TOKEN_VARIABLE = 'JOBQ_TASK_TOKEN';

export const CHANNEL_ROUTES = {
  output: '/v1/output',
  file: '/v1/file',
  stash: '/v1/stash',
} as const;

/** The header carrying the md5 of a file the channel sends. */
export const MD5_HEADER = 'x-jobq-md5';

/** The largest JSON request body the channel reads (an output ref or a marker is far smaller). */
export const MAX_JSON_REQUEST_BYTES = 1024 * 1024;

/** An error answer of the channel. */
export interface ChannelErrorBody {
  error: { code: JobqErrorCode; message: string; retryable: boolean };
}

const STATUS_OF_CODE: Partial<Record<JobqErrorCode, number>> = {
  'invalid-argument': 400,
  auth: 403,
  'not-found': 404,
  conflict: 409,
  corrupt: 422,
  throttled: 429,
  aborted: 499,
  unavailable: 503,
  timeout: 504,
};

/** The HTTP status of an error answer with this code (500 for codes without one of their own). */
export function statusOfCode(code: JobqErrorCode): number {
  return STATUS_OF_CODE[code] ?? 500;
}

/** One line: newlines and control characters become spaces, and very long texts are cut. */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return flat.length > 1000 ? `${flat.slice(0, 1000)}…` : flat;
}

/** The JobqError an error answer stands for (an answer that is not one becomes `internal`). */
export function errorFromAnswer(status: number, text: string): JobqError {
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    body = null;
  }
  const error = (body as Partial<ChannelErrorBody> | null)?.error;
  if (error && typeof error.message === 'string' && (JOBQ_ERROR_CODES as readonly string[]).includes(error.code)) {
    return new JobqError(error.code, error.message, {
      details: { statusCode: status },
      ...(typeof error.retryable === 'boolean' ? { retryable: error.retryable } : {}),
    });
  }
  return new JobqError('internal', `the task channel answered ${status}: ${oneLine(text).slice(0, 200)}`, {
    details: { statusCode: status },
  });
}
