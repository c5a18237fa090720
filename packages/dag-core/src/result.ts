/**
 * One problem found in a definition or an expression. `path` is a JSON-ish path into the
 * input (`tasks[3].depends_on[1]`); `line`/`column` are 1-based and present for YAML input
 * (and, for expressions, `column` is the position inside the expression).
 */
export interface Issue {
  code: string;
  path: string;
  message: string;
  line?: number;
  column?: number;
  /** What probably fixes it, shown after the message: `did you mean "depends_on"?`. */
  hint?: string;
}

/**
 * The one outcome shape of `@jobq/dag-core`: functions that can fail on bad input return a result
 * instead of throwing. `ok` tells the two sides apart; a success carries the `value`, and each
 * function states what else each side holds:
 *
 * - `Result<T>` (the default) checks input: a value with its warnings, or every issue found (with the
 *   warnings found alongside, when there are any).
 * - `Result<T, Failed>` decodes or parses one thing: a value, or one readable line saying what is
 *   wrong and where (`Failed`, also named `DecodeResult` in `@jobq/dag-core/wire`).
 * - Others add their own fields, such as the condition evaluation's `truth` and `explanation`.
 *
 * @typeParam T - the value on success
 * @typeParam F - the fields of a failure besides `ok: false`
 * @typeParam S - the fields of a success besides `ok: true` and `value`
 */
export type Result<T, F extends object = IssuesFailed, S extends object = WithWarnings> =
  ({ ok: true; value: T } & S) | ({ ok: false } & F);

/** The failure side of a {@link Result} that checks input: every issue found, and any warnings. */
export interface IssuesFailed {
  issues: Issue[];
  warnings?: Issue[];
}

/** The success side of a {@link Result} that checks input: the warnings found beside the value. */
export interface WithWarnings {
  warnings: Issue[];
}

/** The failure side of a {@link Result} of a decoder or parser: one readable line saying what is wrong and where. */
export interface Failed {
  error: string;
}

/** @internal */
export function success<T>(value: T, warnings: Issue[] = []): Result<T> {
  return { ok: true, value, warnings };
}

/** @internal */
export function failure<T = never>(issues: Issue[]): Result<T> {
  return { ok: false, issues };
}
