/** A mistake in how the command was called (bad flag value, missing setting): exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * A failure already reported to the user; the command exits with `exitCode` and prints nothing more on
 * stderr (with `--json`, the error document, whose `code` is `code` when given: docs/json-output.md#errors).
 */
export class ReportedFailure extends Error {
  override readonly name = 'ReportedFailure';
  constructor(
    message: string,
    readonly exitCode = 1,
    readonly code?: 'invalid_workflow' | 'usage' | 'failed',
  ) {
    super(message);
  }
}
