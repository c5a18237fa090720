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
  /** A malformed `${{ … }}` in a kwargs.env value (`${{ secrets.NAME }}`, `${{ params.NAME }}` or `${{ matrix.KEY }}`). */
  'secret-ref-syntax',
  /** A `params` declaration that is not a scalar default or `{type, default, description}`, or a given value not of its parameter's type. */
  'bad-param',
  /** `--param` or a params file names a parameter the workflow does not declare. */
  'unknown-param',
  /** A parameter without a default was not given. */
  'missing-param',
  /** A matrix that is not an object of non-empty lists of scalars with well-formed include/exclude entries, or whose tasks' names clash. */
  'bad-matrix',
  /** A matrix that makes more tasks than `MAX_MATRIX_TASKS`. */
  'matrix-too-large',
  /** A `${{ … }}` that is malformed or reads what does not exist there (an undeclared parameter, a matrix key outside its matrix, a secret outside kwargs.env). */
  'bad-reference',
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
export const DEFINITION_WARNING_CODES = [
  'no-cmd',
  'unused-exclude',
  /** A kwargs key close to one the shell processor reads (`command` for `cmd`): allowed, since a task may read its own kwargs. */
  'misspelt-kwarg',
] as const;
