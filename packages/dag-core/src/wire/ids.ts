/**
 * The characters a workflow id may contain: ASCII letters, digits, `.`, `_` and `-`
 * (never `/`, which is what makes ids like `{workflow_id}/{task_name}/{attempt}` parseable).
 */
export const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9._-]+$/;

/**
 * True when `value` is a usable workflow id: a non-empty string of {@link WORKFLOW_ID_PATTERN}
 * characters that is not `.` or `..` (those would be path segments with a meaning of their own
 * in the blob paths built from the id).
 */
export function isValidWorkflowId(value: unknown): value is string {
  return typeof value === 'string' && WORKFLOW_ID_PATTERN.test(value) && value !== '.' && value !== '..';
}

/**
 * True when `value` is acceptable as a task name on the wire: any non-empty string (it may
 * contain `/`, `%` and any other character; the definition validator decides what names a
 * workflow may use).
 */
export function isValidTaskName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}
