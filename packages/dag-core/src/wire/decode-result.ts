import type { Failed, Result } from '../result';

/**
 * The outcome of a wire decoder: a {@link Result} whose failure is one line. Decoders in this folder
 * never throw on bad input: they return `{ ok: false, error }` where `error` is one readable line
 * saying what is wrong (for example
 * `completion body: "attempt_no" must be an integer ≥ 1 or null, got the string "2"`).
 */
export type DecodeResult<T> = Result<T, Failed, object>;

/** Builds a successful {@link DecodeResult}. */
export function decodeOk<T>(value: T): DecodeResult<T> {
  return { ok: true, value };
}

/** Builds a failed {@link DecodeResult} carrying a one-line error message. */
export function decodeError<T = never>(error: string): DecodeResult<T> {
  return { ok: false, error };
}
