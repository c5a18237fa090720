/**
 * The stable codes of definition issues (the package README says what each means). Tools match
 * on these; messages may change.
 */
export const DEFINITION_ISSUE_CODES = [
  'syntax',
  'alias-limit',
  'not-an-object',
  'unknown-field',
  'type',
  'missing-field',
  'out-of-range',
  'empty-tasks',
  'bad-name',
  'duplicate-task',
  'unknown-dependency',
  'self-dependency',
  'duplicate-dependency',
  'cycle',
  'bad-dep-policy',
  'bad-max-parallelism',
  'bad-result-policy',
  /** A retry delay, backoff or longest delay out of range, or retries that would wait longer than a queue can delay a message (7 days). */
  'bad-retry-delay',
  'bad-queue',
  'reserved-kwarg',
  /** A kwarg the shell processor reads has a value no process can take (a NUL, an env name with "="), or a key named "__proto__". */
  'bad-kwarg',
  /** A malformed `${{ … }}` in a kwargs.env value (a secret reference is `${{ secrets.NAME }}`). */
  'secret-ref-syntax',
  /** The definition does not fit the storage it meets: the task message or the index row (see limits.ts). */
  'storage-limit',
  'condition-syntax',
  'condition-disallowed',
  'condition-unknown-input',
  'condition-no-input',
  'condition-without-deps',
  'condition-with-fan-in',
  'bad-fan-in',
] as const;

/** A stable issue code. */
export type DefinitionIssueCode = (typeof DEFINITION_ISSUE_CODES)[number];

/** Codes of warnings: the definition is valid, but probably not what was meant. */
export const DEFINITION_WARNING_CODES = ['no-cmd'] as const;
