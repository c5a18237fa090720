import type { WorkflowDefinition } from '../definition/types';
import { TASK_STATUSES, WORKFLOW_STATUSES, type AppliedRerun, type TaskRuntime, type TaskStatus, type WorkflowStatus } from './types';

/**
 * The pieces every stored form of a runtime shares: one task's record and the workflow-level
 * fields, in the snake_case of the wire formats. The whole-runtime blob (format 1), snapshots and
 * log records (format 2) are made of these.
 */

/** A stored form could not be read: unknown version, bad JSON, or a field of the wrong shape. */
export class RuntimeDecodeError extends Error {
  /**
   * @param message what is wrong, never quoting more than one field's value
   * @param subject what was read: "runtime blob" (format 1), "runtime snapshot", "runtime log", "definition"
   */
  constructor(message: string, subject = 'runtime blob') {
    super(`${subject}: ${message}`);
    this.name = 'RuntimeDecodeError';
  }
}

/** One task's record as stored. Fields at their initial value (0, null, false) are left out. */
export type TaskJson = {
  status: TaskStatus;
  attempt_no?: number;
  retry_base?: number;
  output_ref?: string;
  error?: string;
  dispatched_at?: string;
  started_at?: string;
  completed_at?: string;
  awaiting_inputs?: true;
  retry_due_at?: string;
};

/** The stored record of one task state. */
export function encodeTaskState(t: TaskRuntime): TaskJson {
  const json: TaskJson = { status: t.status };
  if (t.attemptNo !== 0) json.attempt_no = t.attemptNo;
  if (t.retryBase !== 0) json.retry_base = t.retryBase;
  if (t.outputRef !== null) json.output_ref = t.outputRef;
  if (t.error !== null) json.error = t.error;
  if (t.dispatchedAt !== null) json.dispatched_at = t.dispatchedAt;
  if (t.startedAt !== null) json.started_at = t.startedAt;
  if (t.completedAt !== null) json.completed_at = t.completedAt;
  if (t.awaitingInputs) json.awaiting_inputs = true;
  if (t.retryDueAt !== null) json.retry_due_at = t.retryDueAt;
  return json;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Shortens a value for an error message: a field's value, never a whole document. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? 'nothing';
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Value check of one stored field. */
export type Check<T> = (v: unknown) => v is T;

export function field<T>(obj: Record<string, unknown>, key: string, check: Check<T>, what: string, where: string, subject: string): T {
  const value = obj[key];
  if (!check(value)) throw new RuntimeDecodeError(`${where}"${key}" must be ${what}, got ${shown(value)}`, subject);
  return value;
}

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
export const isNullableString = (v: unknown): v is string | null => v === null || typeof v === 'string';
export const optional =
  <T>(check: Check<T>) =>
  (v: unknown): v is T | undefined =>
    v === undefined || check(v);
export const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
/** Null, or a list of `{"id": …, "at": …}` (strings, and nothing else). */
export const isAppliedReruns = (v: unknown): v is readonly AppliedRerun[] | null =>
  v === null ||
  (Array.isArray(v) && v.every((e) => isRecord(e) && typeof e.id === 'string' && typeof e.at === 'string' && Object.keys(e).length === 2));
const isWorkflowStatus = (v: unknown): v is WorkflowStatus => WORKFLOW_STATUSES.includes(v as WorkflowStatus);
const isTaskStatus = (v: unknown): v is TaskStatus => TASK_STATUSES.includes(v as TaskStatus);

const TASK_KEYS = new Set([
  'status',
  'attempt_no',
  'retry_base',
  'output_ref',
  'error',
  'dispatched_at',
  'started_at',
  'completed_at',
  'awaiting_inputs',
  'retry_due_at',
]);

/**
 * A task state from its stored record. `strict` refuses keys this version does not write (the
 * format-2 forms; format 1 has always ignored them).
 */
export function decodeTaskState(raw: unknown, where: string, subject: string, strict: boolean): TaskRuntime {
  if (!isRecord(raw)) throw new RuntimeDecodeError(`${where} must be an object, got ${shown(raw)}`, subject);
  if (strict) {
    for (const key of Object.keys(raw))
      if (!TASK_KEYS.has(key)) throw new RuntimeDecodeError(`${where} has an unknown field "${key.slice(0, 40)}"`, subject);
  }
  const at = `${where}.`;
  const status = field(raw, 'status', isTaskStatus, 'a task status', at, subject);
  let dispatchedAt = field(raw, 'dispatched_at', optional(isString), 'a timestamp', at, subject) ?? null;
  let startedAt = field(raw, 'started_at', optional(isString), 'a timestamp', at, subject) ?? null;
  if (!strict && dispatchedAt === null && startedAt !== null) {
    // Format 1 written before `dispatched_at` existed, when `started_at` was the dispatch time.
    // (Format 2 writes both as they are: a completion can report `started_at` for an attempt whose
    // dispatch was never recorded.)
    dispatchedAt = startedAt;
    startedAt = null;
  }
  const awaiting = field(raw, 'awaiting_inputs', optional(isBool), 'a boolean', at, subject) ?? false;
  return {
    status,
    attemptNo: field(raw, 'attempt_no', optional(isCount), 'a count', at, subject) ?? 0,
    retryBase: field(raw, 'retry_base', optional(isCount), 'a count', at, subject) ?? 0,
    outputRef: field(raw, 'output_ref', optional(isString), 'a string', at, subject) ?? null,
    error: field(raw, 'error', optional(isString), 'a string', at, subject) ?? null,
    dispatchedAt,
    startedAt,
    completedAt: field(raw, 'completed_at', optional(isString), 'a timestamp', at, subject) ?? null,
    awaitingInputs: awaiting,
    retryDueAt: field(raw, 'retry_due_at', optional(isString), 'a timestamp', at, subject) ?? null,
  };
}

/**
 * The workflow-level fields that are stored: everything of a runtime but its id, definition and
 * task states (and what is derived from them).
 */
export interface StoredWorkflowFields {
  outputsContainer: string | null;
  status: WorkflowStatus;
  activated: boolean;
  cancelRequested: boolean;
  cancelAppliedAt: string | null;
  retryAppliedAt: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  corruptReason: string | null;
  deadlineAt: string | null;
  cancelReason: string | null;
  rerunsApplied: readonly AppliedRerun[] | null;
  traceparent: string | null;
}

/**
 * `optional`: a field added after format 2 was first written. A full record (a snapshot) leaves it
 * out while it is null and a reader takes a missing one as null, so runtimes that do not use it read
 * and write as they always did.
 */
type FieldSpec = {
  [K in keyof StoredWorkflowFields]: { key: K; json: string; check: Check<StoredWorkflowFields[K]>; what: string; optional?: true };
}[keyof StoredWorkflowFields];

/** Every stored workflow field: its name, its stored key and its check, in the order they are written. */
const WORKFLOW_FIELDS: readonly FieldSpec[] = [
  { key: 'status', json: 'status', check: isWorkflowStatus, what: 'a workflow status' },
  { key: 'activated', json: 'activated', check: isBool, what: 'a boolean' },
  { key: 'cancelRequested', json: 'cancel_requested', check: isBool, what: 'a boolean' },
  { key: 'cancelAppliedAt', json: 'cancel_applied_at', check: isNullableString, what: 'a timestamp or null' },
  { key: 'retryAppliedAt', json: 'retry_applied_at', check: isNullableString, what: 'a timestamp or null' },
  { key: 'createdAt', json: 'created_at', check: isString, what: 'a timestamp' },
  { key: 'updatedAt', json: 'updated_at', check: isString, what: 'a timestamp' },
  { key: 'finishedAt', json: 'finished_at', check: isNullableString, what: 'a timestamp or null' },
  { key: 'corruptReason', json: 'corrupt_reason', check: isNullableString, what: 'a string or null' },
  { key: 'outputsContainer', json: 'outputs_container', check: isNullableString, what: 'a string or null' },
  { key: 'deadlineAt', json: 'deadline_at', check: isNullableString, what: 'a timestamp or null', optional: true },
  { key: 'cancelReason', json: 'cancel_reason', check: isNullableString, what: 'a string or null', optional: true },
  { key: 'rerunsApplied', json: 'reruns_applied', check: isAppliedReruns, what: 'a list of {"id", "at"} or null', optional: true },
  { key: 'traceparent', json: 'traceparent', check: isNullableString, what: 'a string or null', optional: true },
];

const FIELD_BY_JSON = new Map(WORKFLOW_FIELDS.map((f) => [f.json, f]));

/** The stored workflow fields of a runtime. */
export function storedFieldsOf(runtime: StoredWorkflowFields): StoredWorkflowFields {
  return {
    outputsContainer: runtime.outputsContainer,
    status: runtime.status,
    activated: runtime.activated,
    cancelRequested: runtime.cancelRequested,
    cancelAppliedAt: runtime.cancelAppliedAt,
    retryAppliedAt: runtime.retryAppliedAt,
    createdAt: runtime.createdAt,
    updatedAt: runtime.updatedAt,
    finishedAt: runtime.finishedAt,
    corruptReason: runtime.corruptReason,
    deadlineAt: runtime.deadlineAt,
    cancelReason: runtime.cancelReason,
    rerunsApplied: runtime.rerunsApplied,
    traceparent: runtime.traceparent,
  };
}

/** The stored workflow fields as snake_case JSON: all of them, or those that differ from `previous`. */
export function encodeWorkflowFields(runtime: StoredWorkflowFields, previous?: StoredWorkflowFields): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const spec of WORKFLOW_FIELDS) {
    if (previous !== undefined && previous[spec.key] === runtime[spec.key]) continue;
    if (previous === undefined && spec.optional && runtime[spec.key] === null) continue;
    json[spec.json] = runtime[spec.key];
  }
  return json;
}

/**
 * Reads stored workflow fields onto `into`: every field is required unless `partial` (a log
 * record carries only the fields that changed). Unknown keys are refused.
 */
export function decodeWorkflowFields(
  raw: unknown,
  into: Partial<StoredWorkflowFields>,
  partial: boolean,
  where: string,
  subject: string,
): void {
  if (!isRecord(raw)) throw new RuntimeDecodeError(`${where} must be an object, got ${shown(raw)}`, subject);
  for (const key of Object.keys(raw))
    if (!FIELD_BY_JSON.has(key)) throw new RuntimeDecodeError(`${where} has an unknown field "${key.slice(0, 40)}"`, subject);
  const target = into as Record<string, unknown>;
  const at = where === '' ? '' : `${where}.`;
  for (const spec of WORKFLOW_FIELDS) {
    if (!(spec.json in raw)) {
      if (partial) continue;
      if (spec.optional) {
        target[spec.key] = null;
        continue;
      }
    }
    target[spec.key] = field(raw, spec.json, spec.check as Check<unknown>, spec.what, at, subject);
  }
}

const POSITIONS = new WeakMap<WorkflowDefinition, ReadonlyMap<string, number>>();

/** Task name → position in the definition; computed once per definition object. */
export function taskPositions(definition: WorkflowDefinition): ReadonlyMap<string, number> {
  let positions = POSITIONS.get(definition);
  if (positions === undefined) {
    positions = new Map(definition.tasks.map((t, i) => [t.name, i]));
    POSITIONS.set(definition, positions);
  }
  return positions;
}
