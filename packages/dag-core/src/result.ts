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
 * The outcome of a function that checks input: a value with warnings, or every issue found (with
 * the warnings found alongside, when there are any).
 */
export type Result<T> =
  | { ok: true; value: T; warnings: Issue[] }
  | { ok: false; issues: Issue[]; warnings?: Issue[] };

/** @internal */
export function success<T>(value: T, warnings: Issue[] = []): Result<T> {
  return { ok: true, value, warnings };
}

/** @internal */
export function failure<T = never>(issues: Issue[]): Result<T> {
  return { ok: false, issues };
}
