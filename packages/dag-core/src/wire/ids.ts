/**
 * The one rule for workflow ids, applied by submit, the wire decoders and the stores alike: 1–128
 * ASCII letters, digits, `.`, `_` and `-`, starting with a letter or digit. Never `/` (which keeps
 * ids like `{workflow_id}/{task_name}/{attempt}` parseable), never `.` or `..` (path segments with a
 * meaning of their own), and never a leading `_`: the engine's own blobs (`_coordinator.lock`,
 * `_coordinator.stats.json`, `_shards/…`) start with one, so no workflow id can name them.
 */
export const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The longest workflow id ({@link WORKFLOW_ID_PATTERN}). */
export const MAX_WORKFLOW_ID_LENGTH = 128;

/** True when `value` is a workflow id by {@link WORKFLOW_ID_PATTERN}. */
export function isValidWorkflowId(value: unknown): value is string {
  return typeof value === 'string' && WORKFLOW_ID_PATTERN.test(value);
}

/**
 * True when `value` is acceptable as a task name on the wire: any non-empty string (it may
 * contain `/`, `%` and any other character; the definition validator decides what names a
 * workflow may use).
 */
export function isValidTaskName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}
